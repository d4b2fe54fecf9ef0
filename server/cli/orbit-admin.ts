#!/usr/bin/env node
// orbit-admin. Every argument is checked before the database is touched, so an error leaves the
// database and the file system as they were.
import { ID_RE } from '@orbit/protocol/ids';
import { withTransaction, type Tx } from '../db/pool.js';
import { bootstrap, reserveCredentialsFile, validateBootstrapInput } from '../admin/bootstrap.js';
import { credentialNamespace, insertCredential, revokeCredential } from '../db/credentials.js';
import { insertAudit, namespaceEnvironment, setApplicationQuotas } from '../db/tenants.js';
import { queuesInNamespace } from '../db/queues.js';
import { ALL_SCOPES, hashToken, newToken, type Scope } from '../admin/access.js';
import { newId } from '../ids.js';
import { one, parseFlags, runCli, runIfScript, type CliIo } from './args.js';
import { READ_USAGE, readCommand } from './admin-read.js';
import { announceDsn, withPool } from './local-dsn.js';
import { gatewayUrl } from '../config.js';

const USAGE = `usage:
  orbit-admin bootstrap --application NAME --namespace NAME --environment ENV --queue NAME [--queue NAME...] [--worker-access] --output FILE
  orbit-admin credential create --namespace-id ID --scopes "tasks:submit tasks:read ..." [--queue-ids ID,ID | --queue-ids '*'] [--name LABEL]
  orbit-admin credential revoke --id CREDENTIAL_ID
  orbit-admin quota set --application-id ID [--max-active-attempts N] [--max-unfinished-tasks N]
${READ_USAGE}
environment: ORBIT_MYSQL_DSN=mysql://user:pass@host:port/db (default: the embedded database of a running
\`npm start\`, found through ORBIT_HOME, default .orbit), ORBIT_URL (written into the credentials file)`;

function inTransaction(dsn: string, fn: (c: Tx) => Promise<void>): Promise<void> {
  return withPool(dsn, (p) => withTransaction(p, fn));
}

function positiveInt(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]{0,9}$/.test(v) || Number(v) > 4294967295) throw new Error(`--${name} must be an integer in 1..4294967295`);
  return Number(v);
}

/** Separated by white space or commas, each once. */
const words = (list: string): string[] => [...new Set(list.split(/[\s,]+/).filter(Boolean))];

function id(flags: Map<string, string[]>, name: string): string {
  const v = one(flags, name)!;
  if (!ID_RE.test(v)) throw new Error(`--${name} must be a 32-hex id`);
  return v;
}

/** Tests call it in-process with collectors for `io`. */
export function main(argv: string[], env: NodeJS.ProcessEnv = process.env, io: CliIo = process): Promise<number> {
  return runCli('orbit-admin', io, () => command(argv, env, io));
}

async function command(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<void> {
  /** Called only once the arguments are known to be valid. */
  const dsnFromEnv = (): string => announceDsn('orbit-admin', env, io.stderr);
  const [cmd, sub] = argv;
  if (argv.length === 0) throw new Error('no command given; run `orbit-admin --help` for usage');
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.stdout.write(USAGE + '\n');
    return;
  }

  if (cmd === 'bootstrap') {
    const flags = parseFlags(argv.slice(1), ['worker-access'], ['application', 'namespace', 'environment', 'queue', 'output']);
    const input = {
      workerAccess: one(flags, 'worker-access', false) !== undefined,
      application: one(flags, 'application')!,
      namespace: one(flags, 'namespace')!,
      environment: one(flags, 'environment')!,
      queues: flags.get('queue') ?? [],
      url: gatewayUrl(env),
    };
    const output = one(flags, 'output')!;
    validateBootstrapInput(input);
    const dsn = dsnFromEnv();
    // The file is reserved first: an unwritable --output fails before any row is written.
    const file = reserveCredentialsFile(output);
    try {
      const creds = await withPool(dsn, (p) => bootstrap(p, input));
      file.commit(creds);
      io.stdout.write(`wrote ${output} (application ${creds.application_id}, namespace ${creds.namespace_id}, queue ${creds.queue_id})\n`);
    } catch (err) {
      file.abort();
      throw err;
    }
    return;
  }

  if (cmd === 'credential' && sub === 'create') {
    const flags = parseFlags(argv.slice(2), [], ['namespace-id', 'scopes', 'queue-ids', 'name']);
    const namespaceId = id(flags, 'namespace-id');
    const scopes = words(one(flags, 'scopes')!);
    if (scopes.length === 0) throw new Error(`--scopes names no scope; known: ${ALL_SCOPES.join(' ')}`);
    for (const s of scopes) if (!ALL_SCOPES.includes(s as Scope)) throw new Error(`unknown scope ${s}; known: ${ALL_SCOPES.join(' ')}`);
    const rawQueues = (one(flags, 'queue-ids', false) ?? '*').trim();
    const queueIds = rawQueues === '*' ? '*' : words(rawQueues);
    if (queueIds !== '*' && (queueIds.length === 0 || queueIds.some((q) => !ID_RE.test(q)))) {
      throw new Error('--queue-ids must be 32-hex queue ids separated by commas, or *');
    }
    const name = one(flags, 'name', false) ?? 'cli';
    if (name.length < 1 || name.length > 128) throw new Error('--name must be 1-128 characters');
    const token = newToken();
    const credId = newId();
    await inTransaction(dsnFromEnv(), async (c) => {
      if ((await namespaceEnvironment(c, namespaceId)) === undefined) throw new Error(`namespace ${namespaceId} not found`);
      if (queueIds !== '*') {
        const found = new Set((await queuesInNamespace(c, namespaceId, queueIds)).map((q) => q.id));
        const missing = queueIds.find((q) => !found.has(q));
        if (missing) throw new Error(`queue ${missing} not found in namespace ${namespaceId}`);
      }
      await insertCredential(c, { id: credId, namespaceId, name, tokenHash: hashToken(token), scopes, queueIds });
      await insertAudit(c, {
        namespaceId,
        actor: 'orbit-admin',
        action: 'credential.create',
        targetType: 'credential',
        targetId: credId,
        details: { scopes, queueIds },
      });
    });
    io.stdout.write(JSON.stringify({ id: credId, token, namespace_id: namespaceId, scopes, queue_ids: queueIds }) + '\n');
    return;
  }

  if (cmd === 'credential' && sub === 'revoke') {
    const flags = parseFlags(argv.slice(2), [], ['id']);
    const credId = id(flags, 'id');
    await inTransaction(dsnFromEnv(), async (c) => {
      const namespaceId = await credentialNamespace(c, credId);
      if (namespaceId === null) throw new Error(`credential ${credId} not found`);
      if (!(await revokeCredential(c, credId))) throw new Error(`credential ${credId} is already revoked`);
      await insertAudit(c, { namespaceId, actor: 'orbit-admin', action: 'credential.revoke', targetType: 'credential', targetId: credId });
    });
    io.stdout.write(`revoked ${credId}\n`);
    return;
  }

  if (cmd === 'quota' && sub === 'set') {
    const flags = parseFlags(argv.slice(2), [], ['application-id', 'max-active-attempts', 'max-unfinished-tasks']);
    const applicationId = id(flags, 'application-id');
    const q = {
      maxActiveAttempts: positiveInt('max-active-attempts', one(flags, 'max-active-attempts', false)),
      maxUnfinishedTasks: positiveInt('max-unfinished-tasks', one(flags, 'max-unfinished-tasks', false)),
    };
    if (q.maxActiveAttempts === undefined && q.maxUnfinishedTasks === undefined) {
      throw new Error('quota set needs --max-active-attempts N and/or --max-unfinished-tasks N');
    }
    await inTransaction(dsnFromEnv(), async (c) => {
      if (!(await setApplicationQuotas(c, applicationId, q))) throw new Error(`application ${applicationId} not found`);
      await insertAudit(c, { namespaceId: null, actor: 'orbit-admin', action: 'quota.set', targetType: 'application', targetId: applicationId, details: q });
    });
    io.stdout.write(`quota updated for ${applicationId}\n`);
    return;
  }

  const read = readCommand(argv);
  if (read) {
    const out = await withPool(dsnFromEnv(), read);
    io.stdout.write(out);
    return;
  }

  const what = ['credential', 'quota', 'queues', 'tasks', 'task'].includes(cmd!) ? `${cmd} ${sub ?? ''}`.trim() : cmd;
  throw new Error(
    `unknown command ${JSON.stringify(what)}; commands: bootstrap, credential create, credential revoke, quota set, queues list, tasks list, task get (--help for usage)`,
  );
}

runIfScript(import.meta.url, main);
