// One concurrency_key's holder, fencing token and history, built from public reads only.
import { useState } from 'preact/hooks';
import type { Attempt, Task } from '../../../../protocol/http-views.js';
import { enc, get, withQuery } from '../api.js';
import { useResource } from '../hooks.js';
import { href } from '../router.js';
import { Badge, ErrorBox, Id, Loading, onSubmit, Section, Table, TextField, Time } from '../ui.js';
import { TaskTable } from './task-table.js';

/** Tasks read per view: the history covers the key's newest tasks. */
const RECENT = 50;

interface KeyView {
  tasks: Task[];
  attempts: (Attempt & { task: Task })[];
}

async function loadKey(key: string): Promise<KeyView> {
  const { tasks } = await get<{ tasks: Task[] }>(withQuery('/v1/tasks', { concurrency_key: key, limit: String(RECENT) }));
  const withAttempts = tasks.filter((t) => t.state !== 'WAITING' || t.attempts_made > 0);
  const lists = await Promise.all(
    withAttempts.map(async (t) => (await get<{ attempts: Attempt[] }>(`/v1/tasks/${enc(t.id)}/attempts`)).attempts.map((a) => ({ ...a, task: t }))),
  );
  const attempts = lists.flat().sort((a, b) => (BigInt(b.concurrency_token ?? '0') > BigInt(a.concurrency_token ?? '0') ? 1 : -1));
  return { tasks, attempts };
}

export function ResourceKeyPage({ id }: { id: string | undefined }) {
  const [draft, setDraft] = useState(id ?? '');
  const view = useResource(id ? () => loadKey(id) : null, [id]);
  const holder = view.data?.attempts.find((a) => a.state === 'LEASED' || a.state === 'RUNNING');
  return (
    <>
      <Section title="Resource key">
        <form class="filters" onSubmit={onSubmit(() => draft && (location.hash = href('key', draft)))}>
          <TextField label="Concurrency key" name="key" value={draft} set={setDraft} />
          <button class="btn" type="submit">
            Show
          </button>
        </form>
        {id && (
          <p>
            Key <code class="key">{id}</code>
          </p>
        )}
      </Section>
      {id && <ErrorBox error={view.error} />}
      {id && !view.data && !view.error && <Loading />}
      {view.data && (
        <>
          <Section title="Holder">
            {holder ? (
              <div class="holder">
                <div class="token-box">
                  <span class="muted">fencing token</span>
                  <strong class="token big" data-holder-token>
                    {holder.concurrency_token}
                  </strong>
                </div>
                <div>
                  attempt {holder.attempt_no} of task <Id id={holder.task.id} page="task" /> <Badge state={holder.state} />
                  <br />
                  worker {holder.worker_id}, lease expires <Time iso={holder.lease_expires_at} />
                </div>
              </div>
            ) : (
              <p class="muted">No attempt holds this key now.</p>
            )}
          </Section>
          <Section title="Waiting tasks">
            <TaskTable tasks={view.data.tasks.filter((t) => t.state === 'WAITING')} empty="No task is waiting for this key." />
          </Section>
          <Section title="Token history">
            <Table
              rows={view.data.attempts}
              rowKey={(a) => a.id}
              empty="No attempts yet."
              cols={[
                { label: 'token', class: 'num', cell: (a) => <strong class="token">{a.concurrency_token ?? '—'}</strong> },
                { label: 'attempt', cell: (a) => <a href={href('task', a.task.id)}>{`${a.task.id.slice(0, 8)}… #${a.attempt_no}`}</a> },
                { label: 'state', cell: (a) => <Badge state={a.state} /> },
                { label: 'worker', cell: (a) => a.worker_id },
                { label: 'leased', cell: (a) => <Time iso={a.leased_at} /> },
                { label: 'finished', cell: (a) => <Time iso={a.finished_at} /> },
              ]}
            />
            <p class="muted">From the key's {RECENT} newest tasks.</p>
          </Section>
        </>
      )}
    </>
  );
}
