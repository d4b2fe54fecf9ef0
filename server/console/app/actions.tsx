// Command controls shared by the pages; queues, subscriptions and schedules have the same lifecycle.
import { useState } from 'preact/hooks';
import type { RetireBody, RevisionBody } from '../../../protocol/http-schemas.js';
import { useAction, type Action } from './hooks.js';
import { Button, ErrorBox, onSubmit, TextField } from './ui.js';

export function ActionStatus<B>({ action, body, what }: { action: Action<B>; body: B; what: string }) {
  if (action.busy) return <span class="muted">{what}…</span>;
  if (action.done)
    return (
      <span class="ok-text" role="status">
        {what}: done
      </span>
    );
  if (!action.error) return null;
  return (
    <div>
      <ErrorBox error={action.error} title={`${what} refused`} />
      {action.error.retryable && (
        <Button onClick={() => void action.run(body)} title={`retries with Idempotency-Key ${action.key ?? ''}`}>
          Retry
        </Button>
      )}
    </div>
  );
}

export interface LifecycleProps {
  /** `/v1/queues/<id>`, `/v1/subscriptions/<id>` or `/v1/schedules/<id>` */
  base: string;
  noun: string;
  resource: { revision: string; paused: boolean; retired_at?: string | null };
  /** Why commands are disabled (missing scope), or undefined. */
  why?: string;
}

export function LifecycleActions(p: LifecycleProps) {
  const { revision, paused, retired_at: retired } = p.resource;
  const pause = useAction<RevisionBody>(`${p.base}:pause`);
  const resume = useAction<RevisionBody>(`${p.base}:resume`);
  const retire = useAction<RetireBody>(`${p.base}:retire`);
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const rev = { expected_revision: revision };
  const retireBody = { expected_revision: revision, reason: reason.trim() };
  const why = p.why ?? (retired ? `${p.noun} is retired` : undefined);
  return (
    <div class="actions">
      <div class="row">
        {paused ? (
          <Button why={why} disabled={resume.busy} onClick={() => void resume.run(rev)} data-act="resume">
            Resume
          </Button>
        ) : (
          <Button why={why} disabled={pause.busy} onClick={() => void pause.run(rev)} data-act="pause">
            Pause
          </Button>
        )}
        <Button why={why} class="btn danger" onClick={() => setOpen(!open)} data-act="retire-open">
          Retire…
        </Button>
        <span class="muted">revision {revision}</span>
      </div>
      <ActionStatus action={pause} body={rev} what="Pause" />
      <ActionStatus action={resume} body={rev} what="Resume" />
      {open && !retired && (
        <form class="retire" onSubmit={onSubmit(() => void retire.run(retireBody))}>
          <p>
            Retiring is <strong>irreversible</strong>. History stays readable. Expected revision: <code>{revision}</code>.
          </p>
          <TextField label="Reason" name="reason" required maxLength={512} value={reason} set={setReason} />
          <button type="submit" class="btn danger" disabled={retire.busy || reason.trim() === ''} data-act="retire">
            Retire {p.noun}
          </button>
        </form>
      )}
      <ActionStatus action={retire} body={retireBody} what="Retire" />
    </div>
  );
}
