import { useState } from 'preact/hooks';
import type { DeliveryRecord, Subscription } from '../../../../protocol/http-views.js';
import { LifecycleActions } from '../actions.js';
import { enc } from '../api.js';
import { useGet, usePage } from '../hooks.js';
import { href } from '../router.js';
import { lacking, type SessionInfo } from '../session.js';
import { Badge, ErrorBox, Fields, lifecycle, Loading, PagerBar, Section, Select, Table, Time } from '../ui.js';

/** Non-retired subscriptions per namespace, paused ones included. */
export const SUBSCRIPTION_SLOTS = 64;

export function SlotMeter({ subs }: { subs: Subscription[] }) {
  const used = subs.filter((s) => !s.retired_at).length;
  return (
    <div class="slots" title="non-retired subscriptions (paused included) this credential can see">
      <meter min={0} max={SUBSCRIPTION_SLOTS} value={used} />
      <span data-slots>{`${used} / ${SUBSCRIPTION_SLOTS} slots used`}</span>
    </div>
  );
}

export function SubscriptionList({ session }: { session: SessionInfo }) {
  const list = useGet<{ subscriptions: Subscription[] }>('/v1/subscriptions');
  const names = new Map(session.queues.map((q) => [q.id, q.name]));
  return (
    <Section title="Subscriptions" actions={list.data && <SlotMeter subs={list.data.subscriptions} />}>
      <ErrorBox error={list.error} />
      {!list.data && !list.error && <Loading />}
      {list.data && (
        <Table
          rows={list.data.subscriptions}
          rowKey={(s) => s.id}
          empty="No subscriptions (a subscription is visible to the credential that created it)."
          cols={[
            { label: 'name', cell: (s) => <a href={href('subscriptions', s.id)}>{s.name}</a> },
            { label: 'state', cell: (s) => <Badge state={lifecycle(s)} /> },
            { label: 'queue', cell: (s) => names.get(s.queue_id) ?? s.queue_id.slice(0, 8) },
            { label: 'events', cell: (s) => s.event_types.map((t) => t.replace('task.', '')).join(', ') },
            { label: 'pending', class: 'num', cell: (s) => s.pending_count },
            { label: 'cursor', class: 'num', cell: (s) => s.cursor },
            { label: 'created', cell: (s) => <Time iso={s.created_at} /> },
          ]}
        />
      )}
    </Section>
  );
}

export function SubscriptionDetail({ id, session }: { id: string; session: SessionInfo }) {
  const sub = useGet<{ subscription: Subscription }>(`/v1/subscriptions/${enc(id)}`);
  const [state, setState] = useState('');
  const [deliveries, pager] = usePage<{ deliveries: DeliveryRecord[] }>(`/v1/subscriptions/${enc(id)}/deliveries`, { state });
  const s = sub.data?.subscription;
  if (sub.error) return <ErrorBox error={sub.error} />;
  if (!s) return <Loading what="subscription" />;
  return (
    <>
      <Section title={`Subscription ${s.name}`} actions={<Badge state={lifecycle(s)} />}>
        <Fields
          items={[
            ['id', <code>{s.id}</code>],
            ['queue', <a href={href('queues', s.queue_id)}>{session.queues.find((q) => q.id === s.queue_id)?.name ?? s.queue_id}</a>],
            ['event types', s.event_types.join(', ')],
            ['cursor', s.cursor],
            ['pending', String(s.pending_count)],
            ['revision', s.revision],
            ['created', <Time iso={s.created_at} />],
            ['retired', s.retired_at ? <Time iso={s.retired_at} /> : null],
            ['retired at sequence', s.retired_sequence],
          ]}
        />
        <LifecycleActions base={`/v1/subscriptions/${enc(s.id)}`} noun="subscription" resource={s} why={lacking(session, 'events:manage')} />
      </Section>
      <Section
        title="Delivery history"
        actions={
          <Select
            name="delivery_state"
            value={state}
            set={(v) => (setState(v), pager.first())}
            any="any state"
            options={['PENDING', 'LEASED', 'EXPIRED', 'ACKED']}
          />
        }
      >
        <ErrorBox error={deliveries.error} />
        {deliveries.data && (
          <Table
            rows={deliveries.data.deliveries}
            rowKey={(d) => d.id}
            empty="No deliveries yet."
            cols={[
              { label: 'sequence', class: 'num', cell: (d) => d.sequence },
              { label: 'state', cell: (d) => <Badge state={d.state} /> },
              { label: 'event', cell: (d) => d.event?.type ?? <span class="muted">pruned</span> },
              { label: 'task', cell: (d) => (d.event ? <a href={href('task', d.event.task_id)}>{d.event.task_id.slice(0, 8)}…</a> : '—') },
              { label: 'attempts', class: 'num', cell: (d) => d.attempts },
              { label: 'lease expires', cell: (d) => <Time iso={d.lease_expires_at} /> },
              { label: 'acked', cell: (d) => <Time iso={d.acked_at} /> },
            ]}
          />
        )}
        <PagerBar pager={pager} nextCursor={deliveries.data?.next_cursor} />
      </Section>
    </>
  );
}
