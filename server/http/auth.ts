import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';
import type { Pool } from '../db/pool.js';
import { findCredentialByTokenHash, type Credential } from '../db/credentials.js';

export type Scope =
  | 'tasks:submit'
  | 'tasks:read'
  | 'queues:manage'
  | 'events:manage'
  | 'events:read'
  | 'workers:connect'
  | 'workers:consume'
  | 'schedules:manage';

export const ALL_SCOPES: Scope[] = ['tasks:submit', 'tasks:read', 'queues:manage', 'events:manage', 'events:read', 'workers:connect', 'workers:consume', 'schedules:manage'];

export function hashToken(token: string): Buffer {
  return crypto.createHash('sha256').update(token, 'utf8').digest();
}

/** A new bearer token: 256 random bits, base64url, with a recognisable prefix. */
export function newToken(): string {
  return 'orb_' + crypto.randomBytes(32).toString('base64url');
}

// The scheme name is case-insensitive (RFC 7235 §2.1); the token is matched exactly.
const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/i;

/** Authenticates a request (HTTP or WebSocket handshake). 401 for anything but a live token. */
export async function authenticate(pool: Pool, req: IncomingMessage): Promise<Credential> {
  const h = req.headers.authorization;
  const m = h ? BEARER.exec(h) : null;
  if (!m) throw new OrbitError('UNAUTHENTICATED', authProblem(h));
  const cred = await findCredentialByTokenHash(pool, hashToken(m[1]!));
  if (!cred || cred.revokedAt) throw new OrbitError('UNAUTHENTICATED', 'unknown or revoked credential');
  return cred;
}

export function requireScope(cred: Credential, scope: Scope): void {
  if (!cred.scopes.includes(scope)) throw new OrbitError('PERMISSION_DENIED', `credential lacks scope ${scope}`);
}

/** 403 unless the credential has one of the scopes. */
export function requireAnyScope(cred: Credential, scopes: Scope[]): void {
  if (!scopes.some((s) => cred.scopes.includes(s))) throw new OrbitError('PERMISSION_DENIED', `credential lacks scope ${scopes.join(' or ')}`);
}

/** 403 when the queue (already known to be in the credential's namespace) is outside queue_ids. */
export function requireQueueAccess(cred: Credential, queueId: string): void {
  if (cred.queueIds !== '*' && !cred.queueIds.includes(queueId)) {
    throw new OrbitError('PERMISSION_DENIED', 'credential is not authorized for this queue');
  }
}

export function canUseQueue(cred: Credential, queueId: string): boolean {
  return cred.queueIds === '*' || cred.queueIds.includes(queueId);
}

/** Why an Authorization header was refused, in words that point at the fix: a missing header, a
 * scheme other than Bearer, or a token that cannot be one Orbit issued (too short, bad bytes) —
 * the last is an unknown credential, not a malformed header. */
function authProblem(h: string | undefined): string {
  if (h === undefined || h.trim() === '') return 'missing Authorization header: send Authorization: Bearer <token>';
  const m = /^(\S+)(?:\s+(.*))?$/.exec(h.trim());
  if (!m || m[1]!.toLowerCase() !== 'bearer') return 'Authorization must use the Bearer scheme: Authorization: Bearer <token>';
  if (!m[2]) return 'Authorization: Bearer has no token';
  return 'unknown or revoked credential (the token is not one Orbit issued)';
}
