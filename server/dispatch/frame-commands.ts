import { OrbitError } from '@orbit/protocol/errors';
import type { ResultFrame, ResultOkFrame } from '@orbit/protocol/frames';
import type { WorkerRef } from '../db/attempt-leases.js';

export type Identity = WorkerRef & { credentialId: string };

export type FrameCommand =
  | { kind: 'start'; who: Identity; attemptId: string; /** the attempt's queue when the session holds it */ queueId: string | null }
  | { kind: 'result'; who: Identity; frame: ResultFrame; /** the frame's output as JSON text, serialized once */ output: string | null };

export type FrameOutcome =
  | { ok: true; kind: 'start'; leaseExpiresAt: string }
  | { ok: true; kind: 'result'; reply: ResultOkFrame; freedQueues: string[] }
  | { ok: false; error: OrbitError }
  /** The item's own transaction failed unexpectedly; the session answers it. */
  | { ok: false; thrown: unknown };

export const fail = (code: ConstructorParameters<typeof OrbitError>[0], message: string, attemptId: string): FrameOutcome => ({
  ok: false,
  error: new OrbitError(code, message, { attempt_id: attemptId }),
});
