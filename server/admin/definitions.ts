// What the commands on named resources share: revisions, audit rows, unique names, and the create
// step of schedules and workflows.
import { OrbitError } from '@orbit/protocol/errors';
import type { Credential } from '../db/credentials.js';
import type { Conn } from '../db/pool.js';
import { dbNow } from '../db/time.js';
import { countActive, insertAudit } from '../db/tenants.js';
import { isDuplicateKey } from '../db/errors.js';
import { setPausedAtRevision } from '../db/paused.js';
import { newId } from '../ids.js';

export interface NewDefinition {
  kind: 'schedule' | 'workflow';
  name: string;
  /** Non-retired definitions of this kind the namespace may hold. */
  limit: number;
  insert: (id: string, now: string) => Promise<unknown>;
  publishFirst: (id: string, now: string) => Promise<void>;
}

export function revisionConflict(expected: string, current: string): OrbitError {
  return new OrbitError('STATE_CONFLICT', `expected_revision ${expected} is not current (${current})`, { field: 'expected_revision' });
}

/** The audit row of a command `cred` ran on the `kind` named `id`. */
export function auditCommand(c: Conn, cred: Credential, kind: string, verb: string, id: string, details?: unknown): Promise<void> {
  return insertAudit(c, { namespaceId: cred.namespaceId, actor: cred.id, action: `${kind}.${verb}`, targetType: kind, targetId: id, details });
}

/** Pauses or resumes a queue or subscription the transaction holds locked, audited; a retired one or
 * a stale expected revision is refused and nothing changes. */
export async function pauseAtRevision(
  c: Conn,
  cred: Credential,
  kind: 'queue' | 'subscription',
  row: { id: string; revision: string | number; retired_at: unknown },
  paused: boolean,
  expectedRevision: string,
): Promise<void> {
  if (row.retired_at) throw new OrbitError('STATE_CONFLICT', `${kind} is retired`);
  if (String(row.revision) !== expectedRevision || !(await setPausedAtRevision(c, `${kind}s`, row.id, paused, expectedRevision))) {
    throw revisionConflict(expectedRevision, String(row.revision));
  }
  await auditCommand(c, cred, kind, paused ? 'pause' : 'resume', row.id);
}

/** Named resources are unique by name in their namespace forever, a retired one's included: the
 * unique key decides, and its duplicate becomes the documented 409 instead of a database error. */
export async function insertNamed(kind: 'queue' | 'subscription' | 'schedule' | 'workflow', name: string, insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (err) {
    if (isDuplicateKey(err)) throw new OrbitError('STATE_CONFLICT', `a ${kind} named ${name} exists or existed in this namespace`, { field: 'name' });
    throw err;
  }
}

/** QUOTA_EXCEEDED when the namespace holds `limit` non-retired `kind`s; the caller holds the
 * namespace lock, which serializes the count against a concurrent create. */
export async function checkQuota(c: Conn, cred: Credential, kind: 'schedule' | 'workflow' | 'subscription', limit: number): Promise<void> {
  const active = await countActive(c, `${kind}s`, cred.namespaceId);
  if (active >= limit) throw new OrbitError('QUOTA_EXCEEDED', `namespace has ${active} non-retired ${kind}s (limit ${limit}); retire one first`);
}

/** The caller holds the namespace lock, which serializes the quota count against a concurrent create. */
export async function createDefinition(c: Conn, cred: Credential, d: NewDefinition): Promise<string> {
  await checkQuota(c, cred, d.kind, d.limit);
  const now = await dbNow(c);
  const id = newId();
  await insertNamed(d.kind, d.name, () => d.insert(id, now));
  await d.publishFirst(id, now);
  await auditCommand(c, cred, d.kind, 'create', id, { name: d.name });
  return id;
}
