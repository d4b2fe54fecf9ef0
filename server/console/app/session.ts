// What the console knows about the signed-in credential, learned only through public calls.
import type { Queue, Task } from '../../../protocol/http-views.js';
import { ApiError, get, probeCommandScope } from './api.js';

export type Scope =
  'tasks:submit' | 'tasks:read' | 'queues:manage' | 'events:manage' | 'events:read' | 'schedules:manage' | 'workflows:manage' | 'workflows:run';

export interface SessionInfo {
  scopes: Set<Scope>;
  /** Queues the credential may use (empty without queues:manage: the list is not readable). */
  queues: Queue[];
  namespaceId: string | null;
}

async function readable<T>(path: string, token: string): Promise<T | null> {
  try {
    return await get<T>(path, token);
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return null;
    throw e;
  }
}

/** On a server without the API (404), the commands it gates are shown disabled and sign-in
 * does not fail. */
async function probeOptionalScope(path: string, token: string): Promise<boolean> {
  try {
    return await probeCommandScope(path, token);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return false;
    throw e;
  }
}

/** Throws ApiError (401 for a bad token) like any call. */
export async function loadSession(token: string): Promise<SessionInfo> {
  const queues = readable<{ queues: Queue[] }>('/v1/queues', token);
  const tasks = readable<{ tasks: Task[] }>('/v1/tasks?limit=1', token);
  const probes: [Scope, Promise<unknown>][] = [
    ['queues:manage', queues],
    ['tasks:read', tasks],
    ['events:read', readable('/v1/subscriptions', token)],
    ['tasks:submit', probeCommandScope('/v1/tasks', token)],
    ['events:manage', probeCommandScope('/v1/subscriptions', token)],
    ['workflows:manage', probeOptionalScope('/v1/workflows', token)],
    // Any well-formed run id (32 hex; the router refuses others with 404): the scope is checked
    // before the Idempotency-Key and before the run is looked up.
    ['workflows:run', probeOptionalScope(`/v1/workflow-runs/${'0'.repeat(32)}:pause`, token)],
  ];
  const granted = await Promise.all(probes.map(async ([scope, probe]) => ((await probe) ? [scope] : [])));
  const [q, t] = [await queues, await tasks];
  return { scopes: new Set(granted.flat()), queues: q?.queues ?? [], namespaceId: q?.queues[0]?.namespace_id ?? t?.tasks[0]?.namespace_id ?? null };
}

/** Why a command is disabled: the scope it needs is missing; undefined when granted. */
export function lacking(session: SessionInfo, scope: Scope): string | undefined {
  return session.scopes.has(scope) ? undefined : `needs the ${scope} scope`;
}

/** A remembered id that is no longer listed is ignored, never replaced by another. */
export function rememberedQueue(namespaceId: string | null): string | null {
  return namespaceId ? localStorage.getItem(`orbit.console.queue.${namespaceId}`) : null;
}
export function rememberQueue(namespaceId: string | null, queueId: string): void {
  if (namespaceId) localStorage.setItem(`orbit.console.queue.${namespaceId}`, queueId);
}
