import type { WorkerSession } from '../../../../protocol/http-views.js';
import { withQuery } from '../api.js';
import { useGet } from '../hooks.js';
import type { SessionInfo } from '../session.js';
import { Badge, ErrorBox, Id, Loading, Section, Table, Time } from '../ui.js';

export function WorkersPage({ session, queueId }: { session: SessionInfo; queueId?: string }) {
  const names = new Map(session.queues.map((q) => [q.id, q.name]));
  const res = useGet<{ workers: WorkerSession[] }>(withQuery('/v1/workers', { queue_id: queueId }));
  return (
    <Section title="Workers">
      <ErrorBox error={res.error} />
      {!res.data && !res.error && <Loading what="workers" />}
      {res.data && (
        <Table
          rows={res.data.workers}
          rowKey={(w) => w.session_id}
          empty="No worker is connected."
          cols={[
            { label: 'worker', cell: (w) => w.worker_id },
            { label: 'session', cell: (w) => <Id id={w.session_id} /> },
            { label: 'node', cell: (w) => w.node_id },
            { label: 'queues', cell: (w) => w.queues.map((q) => names.get(q) ?? q.slice(0, 8)).join(', ') },
            { label: 'keys', cell: (w) => (w.concurrency_keys ? 'yes' : 'no') },
            { label: 'in flight / capacity', class: 'num', cell: (w) => `${w.in_flight} / ${w.capacity}` },
            { label: 'state', cell: (w) => <Badge state={w.draining ? 'draining' : 'active'} /> },
            { label: 'connected', cell: (w) => <Time iso={w.connected_at} /> },
            { label: 'last seen', cell: (w) => <Time iso={w.last_seen_at} /> },
          ]}
        />
      )}
    </Section>
  );
}
