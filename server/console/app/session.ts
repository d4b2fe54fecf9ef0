// What the console knows about the signed-in credential, learned only through public calls.
import type { Queue, Task } from '../../../protocol/http-views.js';
import { get, request, unless } from './api.js';

/** The scopes sign-in probes for, in the order the overview lists them. */
export const SCOPES = ['tasks:read', 'tasks:submit', 'queues:manage', 'events:read', 'events:manage', 'workflows:manage', 'workflows:run'] as const;
export type Scope = (typeof SCOPES)[number];

export interface SessionInfo {
  scopes: Set<Scope>;
  /** Queues the credential may use (empty without queues:manage: the list is not readable). */
  queues: Queue[];
  namespaceId: string | null;
}

const readable = <T>(path: string, token: string) => unless<T | null>(get<T>(path, token), { 403: null });
/** A POST without an Idempotency-Key, which a command refuses before any effect: 400 with its
 * scope, 403 without; nothing is stored. `absent`: a server without the API (404) shows the commands
 * it gates disabled, and sign-in does not fail. */
const commandScope = (path: string, token: string, absent: Record<number, boolean> = {}) =>
  unless(
    request('POST', path, {}, undefined, token).then(() => true),
    { 400: true, 403: false, ...absent },
  );

/** Throws ApiError (401 for a bad token) like any call. */
export async function loadSession(token: string): Promise<SessionInfo> {
  const queues = readable<{ queues: Queue[] }>('/v1/queues', token);
  const tasks = readable<{ tasks: Task[] }>('/v1/tasks?limit=1', token);
  const probes: [Scope, Promise<unknown>][] = [
    ['queues:manage', queues],
    ['tasks:read', tasks],
    ['events:read', readable('/v1/subscriptions', token)],
    ['tasks:submit', commandScope('/v1/tasks', token)],
    ['events:manage', commandScope('/v1/subscriptions', token)],
    ['workflows:manage', commandScope('/v1/workflows', token, { 404: false })],
    // Any well-formed run id (32 hex; the router refuses others with 404): the scope is checked
    // before the Idempotency-Key and before the run is looked up.
    ['workflows:run', commandScope(`/v1/workflow-runs/${'0'.repeat(32)}:pause`, token, { 404: false })],
  ];
  const granted = await Promise.all(probes.map(async ([scope, answer]) => ((await answer) ? [scope] : [])));
  const [q, t] = [await queues, await tasks];
  return { scopes: new Set(granted.flat()), queues: q?.queues ?? [], namespaceId: q?.queues[0]?.namespace_id ?? t?.tasks[0]?.namespace_id ?? null };
}

/** Why a command is disabled: the scope it needs is missing; undefined when granted. */
export function lacking(session: SessionInfo, scope: Scope): string | undefined {
  return session.scopes.has(scope) ? undefined : `needs the ${scope} scope`;
}
