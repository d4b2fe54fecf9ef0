import { useState } from 'preact/hooks';
import type { CancelTaskBody, ResolveTaskBody } from '../../../../protocol/http-schemas.js';
import type { Attempt, Task } from '../../../../protocol/http-views.js';
import { ActionStatus } from '../actions.js';
import { enc } from '../api.js';
import { useAction, useGet } from '../hooks.js';
import { href } from '../router.js';
import { lacking, type SessionInfo } from '../session.js';
import { Badge, Button, ErrorBox, Fields, Id, Json, KeyLink, Loading, Section, Select, Table, TextField, Time } from '../ui.js';

type Resolution = ResolveTaskBody['resolution'];

function timeline(t: Task, attempts: Attempt[]): { at: string; what: string }[] {
  const ev = [{ at: t.created_at, what: 'accepted' }];
  for (const a of attempts) {
    const tok = a.concurrency_token !== undefined ? ` (token ${a.concurrency_token})` : '';
    ev.push({ at: a.leased_at, what: `attempt ${a.attempt_no} leased to ${a.worker_id}${tok}` });
    if (a.started_at) ev.push({ at: a.started_at, what: `attempt ${a.attempt_no} started` });
    if (a.finished_at) ev.push({ at: a.finished_at, what: `attempt ${a.attempt_no} ${a.state.toLowerCase()}${a.error ? `: ${a.error.code}` : ''}` });
  }
  if (t.finished_at) ev.push({ at: t.finished_at, what: `task ${t.state.toLowerCase()}` });
  return ev.sort((a, b) => a.at.localeCompare(b.at));
}

export function TaskPage({ id, session }: { id: string; session: SessionInfo }) {
  const task = useGet<{ task: Task }>(`/v1/tasks/${enc(id)}`);
  const attempts = useGet<{ attempts: Attempt[] }>(`/v1/tasks/${enc(id)}/attempts`);
  const cancel = useAction<CancelTaskBody>(`/v1/tasks/${enc(id)}:cancel`);
  const resolve = useAction<ResolveTaskBody>(`/v1/tasks/${enc(id)}:resolve`);
  const [reason, setReason] = useState('');
  const [resolution, setResolution] = useState<Resolution>('retry');
  const t = task.data?.task;
  const cancelBody: CancelTaskBody = reason.trim() ? { reason: reason.trim() } : {};
  const resolveBody: ResolveTaskBody = { resolution, ...(reason.trim() ? { reason: reason.trim() } : {}) };
  const queueName = t && session.queues.find((q) => q.id === t.queue_id)?.name;
  if (task.error) return <ErrorBox error={task.error} />;
  if (!t) return <Loading what="task" />;
  const cancellable = t.state === 'WAITING' || t.state === 'LEASED';
  return (
    <>
      <Section title="Task" actions={<Badge state={t.state} />}>
        <Fields
          items={[
            ['id', <code>{t.id}</code>],
            ['queue', <a href={href('queues', t.queue_id)}>{queueName ?? t.queue_id}</a>],
            ['handler', `${t.handler}@${t.handler_version}`],
            ['payload version', t.payload_version],
            ['concurrency key', <KeyLink k={t.concurrency_key} />],
            ['business key', t.business_key],
            ['priority', String(t.priority)],
            ['attempts', `${t.attempts_made} / ${t.max_attempts}`],
            ['not before', t.not_before ? <Time iso={t.not_before} /> : null],
            ['deadline', <Time iso={t.deadline_at} />],
            ['created', <Time iso={t.created_at} />],
            ['updated', <Time iso={t.updated_at} />],
            ['finished', t.finished_at ? <Time iso={t.finished_at} /> : null],
          ]}
        />
        <div class="actions">
          <TextField label="Reason (optional)" name="reason" maxLength={512} value={reason} set={setReason} />
          <div class="row">
            <Button
              class="btn danger"
              data-act="cancel"
              why={lacking(session, 'tasks:submit') ?? (!cancellable ? 'only WAITING or LEASED tasks can be cancelled' : undefined)}
              disabled={cancel.busy}
              onClick={() => void cancel.run(cancelBody)}
            >
              Cancel task
            </Button>
            <Select
              name="resolution"
              value={resolution}
              set={(v) => setResolution(v as Resolution)}
              options={['retry', 'succeeded', 'failed']}
              disabled={t.state !== 'NEEDS_REVIEW'}
            />
            <Button
              data-act="resolve"
              why={lacking(session, 'tasks:submit') ?? (t.state !== 'NEEDS_REVIEW' ? 'only NEEDS_REVIEW tasks can be resolved' : undefined)}
              disabled={resolve.busy}
              onClick={() => void resolve.run(resolveBody)}
            >
              Resolve
            </Button>
          </div>
          <ActionStatus action={cancel} body={cancelBody} what="Cancel" />
          <ActionStatus action={resolve} body={resolveBody} what="Resolve" />
        </div>
      </Section>
      <div class="two">
        <Section title="Payload">
          <Json value={t.payload} />
        </Section>
        <Section title="Result">
          <Json value={t.result} />
        </Section>
      </div>
      <Section title="Attempts">
        <ErrorBox error={attempts.error} />
        {attempts.data && (
          <Table
            rows={attempts.data.attempts}
            rowKey={(a) => a.id}
            empty="No attempts yet."
            cols={[
              { label: '#', class: 'num', cell: (a) => a.attempt_no },
              { label: 'state', cell: (a) => <Badge state={a.state} /> },
              {
                label: 'token',
                class: 'num',
                cell: (a) => (a.concurrency_token !== undefined ? <strong class="token">{a.concurrency_token}</strong> : <span class="muted">—</span>),
              },
              { label: 'worker', cell: (a) => a.worker_id },
              { label: 'session', cell: (a) => <Id id={a.session_id} /> },
              { label: 'leased', cell: (a) => <Time iso={a.leased_at} /> },
              { label: 'started', cell: (a) => <Time iso={a.started_at} /> },
              { label: 'lease expires', cell: (a) => <Time iso={a.lease_expires_at} /> },
              { label: 'finished', cell: (a) => <Time iso={a.finished_at} /> },
              { label: 'outcome', cell: (a) => (a.error ? `${a.outcome ?? ''} ${a.error.code}: ${a.error.message}` : (a.outcome ?? '—')) },
            ]}
          />
        )}
      </Section>
      <Section title="Timeline">
        <ol class="timeline">
          {timeline(t, attempts.data?.attempts ?? []).map((e, i) => (
            <li key={i}>
              <time dateTime={e.at}>{e.at.replace('T', ' ').replace('Z', '')}</time> <span>{e.what}</span>
            </li>
          ))}
        </ol>
      </Section>
    </>
  );
}
