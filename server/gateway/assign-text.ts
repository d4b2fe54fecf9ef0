import type { GatewayFrame } from '@orbit/protocol/frames';
import type { Assignment } from '../dispatch/grant.js';

/** The task.assign frame as JSON text, the stored payload spliced in without a parse. `task` is
 * the last member and never empty, so the head ends with the two braces the payload goes before. */
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
