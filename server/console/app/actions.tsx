// Command controls shared by the pages; queues and subscriptions have the same lifecycle.
import { useState } from 'preact/hooks';
import type { RetireBody, RevisionBody } from '../../../protocol/http-schemas.js';
import type { Queue } from '../../../protocol/http-views.js';
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
  /** `/v1/queues/<id>` or `/v1/subscriptions/<id>` */
  base: string;
  noun: string;
  revision: string;
  paused: boolean;
  retired: boolean;
  /** Why commands are disabled (missing scope), or undefined. */
  why?: string;
}

export function LifecycleActions(p: LifecycleProps) {
  const pause = useAction<RevisionBody>(`${p.base}:pause`);
  const resume = useAction<RevisionBody>(`${p.base}:resume`);
  const retire = useAction<RetireBody>(`${p.base}:retire`);
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const rev = { expected_revision: p.revision };
  const retireBody = { expected_revision: p.revision, reason: reason.trim() };
  const why = p.why ?? (p.retired ? `${p.noun} is retired` : undefined);
  return (
    <div class="actions">
      <div class="row">
        {p.paused ? (
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
        <span class="muted">revision {p.revision}</span>
      </div>
      <ActionStatus action={pause} body={rev} what="Pause" />
      <ActionStatus action={resume} body={rev} what="Resume" />
      {open && !p.retired && (
        <form class="retire" onSubmit={onSubmit(() => void retire.run(retireBody))}>
          <p>
            Retiring is <strong>irreversible</strong>. History stays readable. Expected revision: <code>{p.revision}</code>.
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

/** Pause / resume / retire of one queue (the Queue and Application access pages). */
export function QueueLifecycle({ queue, why }: { queue: Queue; why: string | undefined }) {
  return (
    <LifecycleActions
      base={`/v1/queues/${encodeURIComponent(queue.id)}`}
      noun="queue"
      revision={queue.revision}
      paused={queue.paused}
      retired={!!queue.retired_at}
      why={why}
    />
  );
}
