// `orbit-admin bootstrap`, shared by the CLI, `npm start` and the test setup: reuses by name what
// exists, and always issues a new credential.
import fs from 'node:fs';
import path from 'node:path';
import { QUEUE_DEFAULTS } from '@orbit/protocol/limits';
import { RESOURCE_NAME_RE } from '@orbit/protocol/primitives';
import { withTransaction, type Pool } from '../db/pool.js';
import { findOrCreateApplication, findOrCreateNamespace, insertAudit, namespaceEnvironment } from '../db/tenants.js';
import { findQueueByName, insertQueue } from '../db/queues.js';
import { insertCredential } from '../db/credentials.js';
import { ALL_SCOPES, hashToken, newToken, type Scope } from './access.js';
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
  /** `npm start` writes it for the embedded database, for the CLIs to find. */
  mysql_dsn?: string;
}

/** A bootstrap credential has every scope; the workers' ones only with --worker-access. */
const isWorkerScope = (s: Scope) => s.startsWith('workers:');
const BASE_SCOPES = ALL_SCOPES.filter((s) => !isWorkerScope(s));
const WORKER_SCOPES = ALL_SCOPES.filter(isWorkerScope);

/** Throws one line naming the first invalid field, before anything is written. */
export function validateBootstrapInput(input: BootstrapInput): void {
  if (input.queues.length === 0) throw new Error('bootstrap needs at least one --queue');
  for (const q of input.queues) if (!RESOURCE_NAME_RE.test(q)) throw new Error(`queue name ${JSON.stringify(q)} must be 1-64 of [a-z0-9._-]`);
  if (new Set(input.queues).size !== input.queues.length) throw new Error('--queue names must be distinct');
  for (const [flag, v] of [
    ['--application', input.application],
    ['--namespace', input.namespace],
  ] as const) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(v)) throw new Error(`${flag} must be 1-64 of [A-Za-z0-9._-]`);
  }
  if (!/^[A-Za-z0-9._-]{1,32}$/.test(input.environment)) throw new Error('--environment must be 1-32 of [A-Za-z0-9._-]');
}

export async function bootstrap(pool: Pool, input: BootstrapInput): Promise<CredentialsFile> {
  validateBootstrapInput(input);
  const token = newToken();
  const scopes = input.workerAccess ? [...BASE_SCOPES, ...WORKER_SCOPES] : [...BASE_SCOPES];
  return withTransaction(pool, async (c) => {
    const applicationId = await findOrCreateApplication(c, input.application);
    const namespaceId = await findOrCreateNamespace(c, applicationId, input.namespace, input.environment);
    // A reused namespace keeps its environment; a file naming another one would be a lie.
    const existingEnv = await namespaceEnvironment(c, namespaceId);
    if (existingEnv !== undefined && existingEnv !== input.environment) {
      throw new Error(`namespace ${input.namespace} exists with environment ${existingEnv}; pass --environment ${existingEnv}`);
    }
    const queues: Record<string, string> = {};
    for (const name of input.queues) {
      const existing = await findQueueByName(c, namespaceId, name);
      if (existing) {
        // A retired queue keeps its name forever and takes no new work: handing it out would
        // give a credentials file whose queue refuses every submit.
        if (existing.retired_at) throw new Error(`queue ${name} is retired in namespace ${input.namespace}; pick another --queue name`);
        queues[name] = existing.id;
        continue;
      }
      const id = newId();
      await insertQueue(c, { id, namespace_id: namespaceId, name, ...QUEUE_DEFAULTS });
      queues[name] = id;
    }
    const credentialId = newId();
    await insertCredential(c, { id: credentialId, namespaceId, name: `bootstrap ${input.environment}`, tokenHash: hashToken(token), scopes, queueIds: '*' });
    await insertAudit(c, {
      namespaceId,
      actor: 'orbit-admin',
      action: 'credential.create',
      targetType: 'credential',
      targetId: credentialId,
      details: { scopes },
    });
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

export interface CredentialsFileReservation {
  commit(creds: CredentialsFile): void;
  /** Removes what the reservation created. */
  abort(): void;
}

/** Called before anything else, so that a bad --output changes no database row. The temporary
 * file is created with mode 0600, so the token is never world-readable, not even briefly. */
export function reserveCredentialsFile(file: string): CredentialsFileReservation {
  const target = path.resolve(file);
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(target);
  } catch {
    /* absent: fine */
  }
  if (st && !st.isFile()) throw new Error(`cannot write ${file}: it exists and is not a regular file`);
  const dir = path.dirname(target);
  let createdDir: string | undefined;
  try {
    createdDir = fs.mkdirSync(dir, { recursive: true }) ?? undefined;
  } catch (err) {
    throw new Error(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} creating ${dir}`);
  }
  const tmp = `${target}.${process.pid}.tmp`;
  let fd: number;
  try {
    fd = fs.openSync(tmp, 'wx', 0o600);
  } catch (err) {
    if (createdDir) fs.rmSync(createdDir, { recursive: true, force: true });
    throw new Error(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let open = true;
  const close = () => {
    if (open) fs.closeSync(fd);
    open = false;
  };
  return {
    commit(creds) {
      try {
        fs.fchmodSync(fd, 0o600);
        fs.writeSync(fd, JSON.stringify(creds, null, 2) + '\n');
        fs.fsyncSync(fd);
        close();
        fs.renameSync(tmp, target);
      } catch (err) {
        close();
        fs.rmSync(tmp, { force: true });
        throw new Error(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    },
    abort() {
      close();
      fs.rmSync(tmp, { force: true });
      if (createdDir) fs.rmSync(createdDir, { recursive: true, force: true });
    },
  };
}

export function writeCredentialsFile(file: string, creds: CredentialsFile): void {
  reserveCredentialsFile(file).commit(creds);
}
