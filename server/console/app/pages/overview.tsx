import type { Queue, QueueStats, WorkerSession } from '../../../../protocol/http-views.js';
import { enc, get } from '../api.js';
import { useGet, useResource } from '../hooks.js';
import { href } from '../router.js';
import { SCOPES, type SessionInfo } from '../session.js';
import { Badge, ErrorBox, Fields, lifecycle, Loading, OutcomeChart, Section, Table, Time } from '../ui.js';

export async function loadQueuesWithStats(): Promise<{ queue: Queue; stats: QueueStats | null }[]> {
  const { queues } = await get<{ queues: Queue[] }>('/v1/queues');
  return Promise.all(
    queues.map(async (queue) => ({ queue, stats: (await get<{ stats: QueueStats }>(`/v1/queues/${enc(queue.id)}/stats`).catch(() => null))?.stats ?? null })),
  );
}

export function Overview({ session }: { session: SessionInfo }) {
  const canQueues = session.scopes.has('queues:manage');
  const queues = useResource(canQueues ? loadQueuesWithStats : null, []);
  const workers = useGet<{ workers: WorkerSession[] }>(canQueues ? '/v1/workers' : null);
  return (
    <>
      <Section title="Credential">
        <Fields
          items={[
            ['namespace', <code>{session.namespaceId ?? 'unknown (no readable queue or task yet)'}</code>],
            [
              'scopes',
              <span class="scopes">
                {SCOPES.map((s) => (
                  <span key={s} class={`scope ${session.scopes.has(s) ? 'has' : 'lacks'}`} title={session.scopes.has(s) ? 'granted' : 'not granted'}>
                    {s}
                  </span>
                ))}
              </span>,
            ],
            ['queues', canQueues ? String(session.queues.length) : <span class="muted">needs queues:manage</span>],
          ]}
        />
      </Section>
      <Section title="Queues">
        {!canQueues && <p class="muted">Listing queues needs the queues:manage scope.</p>}
        <ErrorBox error={queues.error} />
        {canQueues && !queues.data && !queues.error && <Loading />}
        {queues.data && (
          <Table
            rows={queues.data}
            rowKey={(r) => r.queue.id}
            empty="No queues."
            cols={[
              { label: 'queue', cell: (r) => <a href={href('queues', r.queue.id)}>{r.queue.name}</a> },
              { label: 'state', cell: (r) => <Badge state={lifecycle(r.queue)} /> },
              { label: 'waiting', class: 'num', cell: (r) => r.stats?.waiting ?? '—' },
              { label: 'leased', class: 'num', cell: (r) => r.stats?.leased ?? '—' },
              { label: 'running', class: 'num', cell: (r) => r.stats?.running ?? '—' },
              {
                label: 'review',
                class: 'num',
                cell: (r) => (r.stats?.needs_review ? <strong class="warn-text">{r.stats.needs_review}</strong> : (r.stats?.needs_review ?? '—')),
              },
              { label: 'active / limit', class: 'num', cell: (r) => `${r.queue.active_attempts} / ${r.queue.max_active_attempts}` },
              { label: 'oldest waiting', cell: (r) => <Time iso={r.stats?.oldest_waiting_at} /> },
              { label: 'last 15 min', cell: (r) => (r.stats ? <OutcomeChart minutes={r.stats.minutes} /> : '—') },
            ]}
          />
        )}
      </Section>
      <Section title="Connected workers" actions={<a href={href('workers')}>All workers →</a>}>
        <ErrorBox error={workers.error} />
        {!canQueues && <p class="muted">Listing workers needs the queues:manage scope.</p>}
        {workers.data && (
          <p>
            <strong class="big">{workers.data.workers.length}</strong> sessions, capacity {workers.data.workers.reduce((n, w) => n + w.capacity, 0)}, in flight{' '}
            {workers.data.workers.reduce((n, w) => n + w.in_flight, 0)}
          </p>
        )}
      </Section>
    </>
  );
}
