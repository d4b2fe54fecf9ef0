// Filters live in the route, so a filtered view can be linked and reloaded.
import { useState } from 'preact/hooks';
import type { Task } from '../../../../protocol/http-views.js';
import { TASK_STATES } from '../../../../protocol/states.js';
import { get, withQuery } from '../api.js';
import { usePager, useResource } from '../hooks.js';
import { href } from '../router.js';
import type { SessionInfo } from '../session.js';
import { ErrorBox, Loading, PagerBar, Section } from '../ui.js';
import { TaskTable } from './task-table.js';

const FILTERS = ['queue_id', 'state', 'concurrency_key', 'business_key'] as const;

export function TasksPage({ query, session }: { query: URLSearchParams; session: SessionInfo }) {
  const filters = Object.fromEntries(FILTERS.map((k) => [k, query.get(k) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const [draft, setDraft] = useState(filters);
  const pager = usePager();
  const cursor = pager.cursor;
  const page = useResource(
    () => get<{ tasks: Task[]; next_cursor: string | null }>(withQuery('/v1/tasks', { ...filters, limit: '50', cursor })),
    [filters, cursor],
  );
  const names = new Map(session.queues.map((q) => [q.id, q.name]));
  const apply = (e: Event) => {
    e.preventDefault();
    pager.first();
    location.hash = href('tasks', undefined, draft);
  };
  const field = (k: (typeof FILTERS)[number]) => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <Section title="Tasks">
      <form class="filters" onSubmit={apply}>
        <label>
          Queue
          <select name="queue_id" value={draft.queue_id} onChange={field('queue_id')}>
            <option value="">any</option>
            {session.queues.map((q) => (
              <option key={q.id} value={q.id}>
                {q.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          State
          <select name="state" value={draft.state} onChange={field('state')}>
            <option value="">any</option>
            {TASK_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Concurrency key
          <input name="concurrency_key" value={draft.concurrency_key} onInput={field('concurrency_key')} />
        </label>
        <label>
          Business key
          <input name="business_key" value={draft.business_key} onInput={field('business_key')} />
        </label>
        <button type="submit" class="btn">
          Apply
        </button>
      </form>
      <ErrorBox error={page.error} />
      {!page.data && !page.error && <Loading what="tasks" />}
      {page.data && <TaskTable tasks={page.data.tasks} queueNames={names} empty="No tasks match." />}
      <PagerBar pager={pager} nextCursor={page.data?.next_cursor} />
    </Section>
  );
}
