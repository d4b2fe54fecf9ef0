// Credential scopes, tokens and the access checks: domain rules shared by the HTTP routes, the
// worker gateway, the domain commands and the CLIs. Reading the token from a request is HTTP's part.
import crypto from 'node:crypto';
import { OrbitError } from '@orbit/protocol/errors';
import type { Credential } from '../db/credentials.js';

export const ALL_SCOPES = [
  'tasks:submit',
  'tasks:read',
  'queues:manage',
  'events:manage',
  'events:read',
  'workers:connect',
  'workers:consume',
  'schedules:manage',
  'workflows:manage',
  'workflows:run',
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export function hashToken(token: string): Buffer {
  return crypto.createHash('sha256').update(token, 'utf8').digest();
}

/** 256 random bits, with a recognisable prefix. */
export function newToken(): string {
  return 'orb_' + crypto.randomBytes(32).toString('base64url');
}

export function requireScope(cred: Credential, scope: Scope): void {
  if (!cred.scopes.includes(scope)) throw new OrbitError('PERMISSION_DENIED', `credential lacks scope ${scope}`);
}

export function requireAnyScope(cred: Credential, scopes: readonly Scope[]): void {
  if (!scopes.some((s) => cred.scopes.includes(s))) throw new OrbitError('PERMISSION_DENIED', `credential lacks scope ${scopes.join(' or ')}`);
}

/** The queue is already known to be in the credential's namespace. */
export function requireQueueAccess(cred: Credential, queueId: string): void {
  if (!canUseQueue(cred, queueId)) throw new OrbitError('PERMISSION_DENIED', 'credential is not authorized for this queue');
}

export function canUseQueue(cred: Credential, queueId: string): boolean {
  return cred.queueIds === '*' || cred.queueIds.includes(queueId);
}
