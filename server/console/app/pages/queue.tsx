import type { Queue, QueueStats, Schedule, ScheduleVersion, Subscription, Task } from '../../../../protocol/http-views.js';
import { LifecycleActions } from '../actions.js';
import { enc, get, unless } from '../api.js';
import { useGet, useResource } from '../hooks.js';
import { href } from '../router.js';
import { lacking, type SessionInfo } from '../session.js';
import { Badge, ErrorBox, Fields, lifecycle, Loading, OutcomeChart, Section, Table, Time } from '../ui.js';
import { TaskTable } from './task-table.js';

/** The schedules that create tasks in the queue (their current version names it); null on a server
 * without /v1/schedules (404). */
async function queueSchedules(queueId: string): Promise<Schedule[] | null> {
  const list = await unless<{ schedules: Schedule[] } | null>(get('/v1/schedules?limit=100'), { 404: null });
  if (!list) return null;
  const versions = await Promise.all(
    list.schedules.map((s) => get<{ version: ScheduleVersion }>(`/v1/schedules/${enc(s.id)}/versions/${s.current_version}`).catch(() => null)),
  );
  return list.schedules.filter((_s, i) => versions[i]?.version.task.queue_id === queueId);
}

export function QueuePage({ id, session }: { id: string; session: SessionInfo }) {
  const q = useGet<{ queue: Queue }>(`/v1/queues/${enc(id)}`);
  const stats = useGet<{ stats: QueueStats }>(`/v1/queues/${enc(id)}/stats`);
  const tasks = useGet<{ tasks: Task[] }>(session.scopes.has('tasks:read') ? `/v1/tasks?queue_id=${enc(id)}&limit=20` : null);
  const subs = useGet<{ subscriptions: Subscription[] }>(session.scopes.has('events:read') ? '/v1/subscriptions' : null);
  const schedules = useResource(() => queueSchedules(id), [id]);
  const queue = q.data?.queue;
  const s = stats.data?.stats;
  return (
    <>
      <ErrorBox error={q.error} />
      {!queue && !q.error && <Loading what="queue" />}
      {queue && (
        <Section title={`Queue ${queue.name}`} actions={<Badge state={lifecycle(queue)} />}>
          <Fields
            items={[
              ['id', <code>{queue.id}</code>],
              ['revision', queue.revision],
              ['paused', String(queue.paused)],
              ['active / limit', `${queue.active_attempts} / ${queue.max_active_attempts}`],
              ['lease', `${queue.lease_seconds} s`],
              ['retry', `${queue.retry.max_attempts} attempts, ${queue.retry.initial_backoff_ms}–${queue.retry.max_backoff_ms} ms ×${queue.retry.multiplier}`],
              ['created', <Time iso={queue.created_at} />],
              ['updated', <Time iso={queue.updated_at} />],
              ['retired', queue.retired_at ? <Time iso={queue.retired_at} /> : null],
            ]}
          />
          <LifecycleActions base={`/v1/queues/${enc(queue.id)}`} noun="queue" resource={queue} why={lacking(session, 'queues:manage')} />
        </Section>
      )}
      <Section title="Stats">
        <ErrorBox error={stats.error} />
        {s && (
          <div class="stats">
            <Fields
              items={[
                ['waiting', String(s.waiting)],
                ['leased', String(s.leased)],
                ['running', String(s.running)],
                ['needs review', String(s.needs_review)],
                ['active / limit', `${s.active_attempts} / ${s.max_active_attempts}`],
                ['oldest waiting', <Time iso={s.oldest_waiting_at} />],
              ]}
            />
            <OutcomeChart minutes={s.minutes} />
          </div>
        )}
      </Section>
      <Section title="Recent tasks" actions={<a href={href('tasks', undefined, { queue_id: id })}>All tasks of this queue →</a>}>
        <ErrorBox error={tasks.error} />
        {tasks.data && <TaskTable tasks={tasks.data.tasks} />}
      </Section>
      <Section title="Subscriptions">
        <ErrorBox error={subs.error} />
        {subs.data && (
          <Table
            rows={subs.data.subscriptions.filter((x) => x.queue_id === id)}
            rowKey={(x) => x.id}
            empty="No subscriptions of this credential target this queue."
            cols={[
              { label: 'name', cell: (x) => <a href={href('subscriptions', x.id)}>{x.name}</a> },
              { label: 'state', cell: (x) => lifecycle(x) },
              { label: 'pending', class: 'num', cell: (x) => x.pending_count },
            ]}
          />
        )}
      </Section>
      <Section title="Schedules">
        {schedules.data === null && <p class="muted">Schedules are not available on this server.</p>}
        <ErrorBox error={schedules.error} />
        {schedules.data && (
          <Table
            rows={schedules.data}
            rowKey={(x) => x.id}
            empty="No schedules target this queue."
            cols={[
              { label: 'name', cell: (x) => <a href={href('schedules', x.id)}>{x.name}</a> },
              { label: 'state', cell: (x) => lifecycle(x) },
              { label: 'next fire', cell: (x) => <Time iso={x.next_fire_at} /> },
            ]}
          />
        )}
      </Section>
    </>
  );
}
