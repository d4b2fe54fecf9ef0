// The SDK's pure checks on the frames of one session (docs/worker-protocol.md, "What an SDK
// must refuse"): task.assign's key and token, and every outgoing frame against its schema, so a
// bad frame is refused here instead of costing the whole session.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { WORKER_FRAMES, type HelloOkFrame, type TaskAssignFrame, type WorkerFrame } from '@orbit/protocol/frames';
import { concurrencyKeyProblem, isUint64String } from '@orbit/protocol/validation';

/** What this process already knows about an attempt (from an earlier session): used to check
 * that resume and repeated assigns keep the attempt's key and token frozen. */
export interface KnownAttempt {
  concurrencyKey?: string;
  concurrencyToken?: string;
}

const outgoingChecks = new Map(Object.entries(WORKER_FRAMES).map(([k, s]) => [k, TypeCompiler.Compile(s)]));

/** The SDK's own checks on task.assign: the message of the violation, or null. `prev` is what
 * this process already knows about the attempt id. */
export function assignProblem(f: TaskAssignFrame, concurrencyKeys: boolean, prev: KnownAttempt | undefined): string | null {
  const key = f.task.concurrency_key;
  const tok = f.concurrency_token;
  if (key !== undefined && tok === undefined) return 'task.assign has a concurrency_key but no concurrency_token';
  if (key === undefined && tok !== undefined) return 'task.assign has a concurrency_token but no concurrency_key';
  if (tok !== undefined && !isTokenString(tok)) return 'concurrency_token is not a non-zero uint64 decimal';
  if (key !== undefined) {
    const p = concurrencyKeyProblem(key);
    if (p) return `concurrency_key ${p}`;
    if (!concurrencyKeys) return 'keyed task assigned to a session that did not declare concurrency_keys';
  }
  // Key and token are frozen for the attempt: a second assign that changes them is a gateway bug
  // that would hand the resource a wrong fencing token.
  if (prev && (prev.concurrencyKey !== key || prev.concurrencyToken !== tok)) {
    return 'repeated task.assign for an attempt with a different concurrency_key or concurrency_token';
  }
  return null;
}

/** The violation of a task.assign of a new attempt while the session holds `held` attempts and
 * declared at most `capacity` (the Go SDK reports the same message). */
export function capacityProblem(held: number, capacity: number): string {
  return `task.assign beyond the declared capacity: ${held} attempts held, capacity ${capacity}`;
}

/** The SDK's own checks on hello.ok: the violation (and the attempt it is about), or null. It must
 * name this worker, and a resumed attempt keeps the token this process knows it by. */
export function helloOkProblem(f: HelloOkFrame, workerId: string, known: ReadonlyMap<string, KnownAttempt>): { message: string; attemptId?: string } | null {
  if (f.worker_id !== workerId) return { message: 'hello.ok names another worker_id' };
  for (const r of f.resumed) {
    const tok = r.concurrency_token;
    if (tok !== undefined && !isTokenString(tok)) return { message: 'resumed concurrency_token is not a non-zero uint64', attemptId: r.attempt_id };
    // Tokens are frozen for the attempt: a resume that changes one breaks the fencing contract.
    const k = known.get(r.attempt_id);
    if (k && k.concurrencyToken !== tok) return { message: 'resume changed the concurrency_token of an attempt', attemptId: r.attempt_id };
  }
  return null;
}

/** A token on the wire: a uint64 decimal string that is not "0" (tokens start at 1). */
export function isTokenString(tok: string): boolean {
  return isUint64String(tok) && tok !== '0';
}

/** Validates an outgoing frame: an error message (`/path message`) or null. */
export function outgoingProblem(frame: WorkerFrame): string | null {
  const check = outgoingChecks.get(frame.type)!;
  if (check.Check(frame)) return null;
  const e = check.Errors(frame).First();
  return e ? `${e.path || '/'} ${e.message}` : 'invalid';
}
