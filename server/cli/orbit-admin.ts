#!/usr/bin/env node
// orbit-admin bootstrap | credential create | credential revoke | quota set (ORBIT_MYSQL_DSN).
import { createPool, withTransaction, type Pool } from '../db/pool.js';
import { bootstrap, writeCredentialsFile } from '../admin/bootstrap.js';
import { insertCredential, revokeCredential } from '../db/credentials.js';
import { insertAudit, setApplicationQuotas } from '../db/tenants.js';
import { ALL_SCOPES, hashToken, newToken, type Scope } from '../http/auth.js';
import { newId } from '../ids.js';
import { one, parseArgs, runMain } from './args.js';

const USAGE = `usage:
  orbit-admin bootstrap --application NAME --namespace NAME --environment ENV --queue NAME [--queue NAME...] [--worker-access] --output FILE
  orbit-admin credential create --namespace-id ID --scopes "tasks:submit tasks:read ..." [--queue-ids ID,ID | --queue-ids '*'] [--name LABEL]
  orbit-admin credential revoke --id CREDENTIAL_ID
  orbit-admin quota set --application-id ID [--max-active-attempts N] [--max-unfinished-tasks N]`;

async function withPool<T>(fn: (p: Pool) => Promise<T>): Promise<T> {
  const dsn = process.env.ORBIT_MYSQL_DSN;
  if (!dsn) throw new Error('ORBIT_MYSQL_DSN is not set (mysql://user:pass@host:port/db)');
  const pool = createPool(dsn, { connectionLimit: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

function positiveInt(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]{0,9}$/.test(v) || Number(v) > 4294967295) throw new Error(`--${name} must be a positive integer`);
  return Number(v);
}

runMain(async () => {
  const [cmd, sub, ...rest] = process.argv.slice(2);
  if (cmd === 'bootstrap') {
    const { flags } = parseArgs([sub ?? '', ...rest].filter((a) => a !== ''), ['worker-access']);
    const input = {
      application: one(flags, 'application')!,
      namespace: one(flags, 'namespace')!,
      environment: one(flags, 'environment')!,
      queues: flags.get('queue') ?? [],
      workerAccess: flags.has('worker-access'),
      url: process.env.ORBIT_URL ?? `http://${process.env.ORBIT_HTTP_ADDR ?? '127.0.0.1:8080'}`,
    };
    const output = one(flags, 'output')!;
    const creds = await withPool((p) => bootstrap(p, input));
    writeCredentialsFile(output, creds);
    process.stdout.write(`wrote ${output} (namespace ${creds.namespace_id}, queue ${creds.queue_id})\n`);
    return;
  }
  if (cmd === 'credential' && sub === 'create') {
    const { flags } = parseArgs(rest, []);
    const namespaceId = one(flags, 'namespace-id')!;
    const scopes = one(flags, 'scopes')!.split(/[\s,]+/).filter(Boolean);
    for (const s of scopes) if (!ALL_SCOPES.includes(s as Scope)) throw new Error(`unknown scope ${s}; known: ${ALL_SCOPES.join(' ')}`);
    const rawQueues = one(flags, 'queue-ids', false) ?? '*';
    const queueIds = rawQueues === '*' ? '*' : rawQueues.split(',').filter(Boolean);
    if (queueIds !== '*' && queueIds.some((q) => !/^[0-9a-f]{32}$/.test(q))) throw new Error('--queue-ids must be 32-hex ids separated by commas, or *');
    const token = newToken();
    const id = newId();
    await withPool((p) =>
      withTransaction(p, async (c) => {
        const [rows] = await c.execute('SELECT id FROM namespaces WHERE id = ?', [namespaceId]);
        if ((rows as unknown[]).length === 0) throw new Error(`namespace ${namespaceId} not found`);
        await insertCredential(c, { id, namespaceId, name: one(flags, 'name', false) ?? 'cli', tokenHash: hashToken(token), scopes, queueIds });
        await insertAudit(c, { namespaceId, actor: 'orbit-admin', action: 'credential.create', targetType: 'credential', targetId: id, details: { scopes, queueIds } });
      }),
    );
    process.stdout.write(JSON.stringify({ id, token, namespace_id: namespaceId, scopes, queue_ids: queueIds }) + '\n');
    return;
  }
  if (cmd === 'credential' && sub === 'revoke') {
    const { flags } = parseArgs(rest, []);
    const id = one(flags, 'id')!;
    const revoked = await withPool((p) =>
      withTransaction(p, async (c) => {
        const ok = await revokeCredential(c, id);
        if (ok) await insertAudit(c, { namespaceId: null, actor: 'orbit-admin', action: 'credential.revoke', targetType: 'credential', targetId: id });
        return ok;
      }),
    );
    if (!revoked) throw new Error(`credential ${id} not found or already revoked`);
    process.stdout.write(`revoked ${id}\n`);
    return;
  }
  if (cmd === 'quota' && sub === 'set') {
    const { flags } = parseArgs(rest, []);
    const applicationId = one(flags, 'application-id')!;
    const q = {
      maxActiveAttempts: positiveInt('max-active-attempts', one(flags, 'max-active-attempts', false)),
      maxUnfinishedTasks: positiveInt('max-unfinished-tasks', one(flags, 'max-unfinished-tasks', false)),
    };
    const ok = await withPool((p) => withTransaction(p, (c) => setApplicationQuotas(c, applicationId, q)));
    if (!ok) throw new Error(`application ${applicationId} not found`);
    process.stdout.write(`quota updated for ${applicationId}\n`);
    return;
  }
  throw new Error(USAGE);
});
