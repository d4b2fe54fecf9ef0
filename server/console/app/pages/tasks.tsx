// Filters live in the route, so a filtered view can be linked and reloaded.
import { useState } from 'preact/hooks';
import type { Task } from '../../../../protocol/http-views.js';
import { TASK_STATES } from '../../../../protocol/states.js';
import { usePage } from '../hooks.js';
import { href } from '../router.js';
import type { SessionInfo } from '../session.js';
import { ErrorBox, Loading, onSubmit, PagerBar, Section, Select, TextField } from '../ui.js';
import { TaskTable } from './task-table.js';

const FILTERS = ['queue_id', 'state', 'concurrency_key', 'business_key'] as const;

export function TasksPage({ query, session }: { query: URLSearchParams; session: SessionInfo }) {
  const filters = Object.fromEntries(FILTERS.map((k) => [k, query.get(k) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const [draft, setDraft] = useState(filters);
  const [page, pager] = usePage<{ tasks: Task[] }>('/v1/tasks', filters);
  const names = new Map(session.queues.map((q) => [q.id, q.name]));
  const apply = onSubmit(() => {
    pager.first();
    location.hash = href('tasks', undefined, draft);
  });
  const set = (k: (typeof FILTERS)[number]) => (v: string) => setDraft({ ...draft, [k]: v });
  return (
    <Section title="Tasks">
      <form class="filters" onSubmit={apply}>
        <Select
          label="Queue"
          name="queue_id"
          value={draft.queue_id}
          set={set('queue_id')}
          any="any"
          options={session.queues.map((q) => [q.id, q.name] as const)}
        />
        <Select label="State" name="state" value={draft.state} set={set('state')} any="any" options={TASK_STATES} />
        <TextField label="Concurrency key" name="concurrency_key" value={draft.concurrency_key} set={set('concurrency_key')} />
        <TextField label="Business key" name="business_key" value={draft.business_key} set={set('business_key')} />
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
