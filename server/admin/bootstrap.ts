// `orbit-admin bootstrap`: creates (or reuses, by name) an application, namespace and queues, and a
// new credential with queue_ids "*". Shared by the CLI, `npm start` and the test setup.
import fs from 'node:fs';
import path from 'node:path';
import { withTransaction, type Pool } from '../db/pool.js';
import { findOrCreateApplication, findOrCreateNamespace, insertAudit } from '../db/tenants.js';
import { findQueueByName, insertQueue } from '../db/queues.js';
import { insertCredential } from '../db/credentials.js';
import { hashToken, newToken, type Scope } from '../http/auth.js';
import { QUEUE_DEFAULTS } from '../http/routes-queues.js';
import { newId } from '../ids.js';

export interface BootstrapInput {
  application: string;
  namespace: string;
  environment: string;
  queues: string[];
  workerAccess: boolean;
  url: string;
}

export interface CredentialsFile {
  url: string;
  token: string;
  application_id: string;
  namespace_id: string;
  environment: string;
  queue_id: string;
  queues: Record<string, string>;
  scopes: Scope[];
}

export const BASE_SCOPES: Scope[] = ['tasks:submit', 'tasks:read', 'queues:manage', 'events:manage', 'events:read'];
export const WORKER_SCOPES: Scope[] = ['workers:connect', 'workers:consume'];

export async function bootstrap(pool: Pool, input: BootstrapInput): Promise<CredentialsFile> {
  if (input.queues.length === 0) throw new Error('bootstrap needs at least one --queue');
  for (const q of input.queues) if (!/^[a-z0-9._-]{1,64}$/.test(q)) throw new Error(`queue name ${JSON.stringify(q)} must be 1-64 of [a-z0-9._-]`);
  for (const [flag, v] of [['--application', input.application], ['--namespace', input.namespace]] as const) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(v)) throw new Error(`${flag} must be 1-64 of [A-Za-z0-9._-]`);
  }
  if (!/^[A-Za-z0-9._-]{1,32}$/.test(input.environment)) throw new Error('--environment must be 1-32 of [A-Za-z0-9._-]');
  const token = newToken();
  const scopes = input.workerAccess ? [...BASE_SCOPES, ...WORKER_SCOPES] : [...BASE_SCOPES];
  return withTransaction(pool, async (c) => {
    const applicationId = await findOrCreateApplication(c, input.application);
    const namespaceId = await findOrCreateNamespace(c, applicationId, input.namespace, input.environment);
    const queues: Record<string, string> = {};
    for (const name of input.queues) {
      const existing = await findQueueByName(c, namespaceId, name);
      if (existing) {
        queues[name] = existing.id;
        continue;
      }
      const id = newId();
      await insertQueue(c, {
        id,
        namespaceId,
        name,
        maxActiveAttempts: QUEUE_DEFAULTS.max_active_attempts,
        leaseSeconds: QUEUE_DEFAULTS.lease_seconds,
        retry: QUEUE_DEFAULTS.retry,
      });
      queues[name] = id;
    }
    const credentialId = newId();
    await insertCredential(c, { id: credentialId, namespaceId, name: `bootstrap ${input.environment}`, tokenHash: hashToken(token), scopes, queueIds: '*' });
    await insertAudit(c, { namespaceId, actor: 'orbit-admin', action: 'credential.create', targetType: 'credential', targetId: credentialId, details: { scopes } });
    return {
      url: input.url,
      token,
      application_id: applicationId,
      namespace_id: namespaceId,
      environment: input.environment,
      queue_id: queues[input.queues[0]!]!,
      queues,
      scopes,
    };
  });
}

/** Writes the credentials file with mode 0600 (created that way, never world-readable). */
export function writeCredentialsFile(file: string, creds: CredentialsFile): void {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(creds, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}
