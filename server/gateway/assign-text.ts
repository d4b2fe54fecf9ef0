// The task.assign frame as text, built once per assignment (Session.deliver).
import type { GatewayFrame } from '@orbit/protocol/frames';
import type { Assignment } from '../dispatch/grant.js';

/** The task.assign frame of an assignment as JSON text, its stored payload spliced in as it is
 * (the payload is never parsed and serialized again: issue 19). `task` is the frame's last member
 * and has members, so the serialized head ends with the two closing braces the payload goes
 * before. */
export function assignText(a: Assignment): string {
  const frame: Omit<Extract<GatewayFrame, { type: 'task.assign' }>, 'task'> & { task: Assignment['task'] } = {
    type: 'task.assign',
    attempt_id: a.attemptId,
    attempt_no: a.attemptNo,
    lease_expires_at: a.leaseExpiresAt,
    ...(a.concurrencyToken !== null ? { concurrency_token: a.concurrencyToken } : {}),
    task: a.task,
  };
  const head = JSON.stringify(frame);
  return `${head.slice(0, -2)},"payload":${a.payloadJson}}}`;
}
