// orbit-admin's read commands, straight from the database: no credential needed, every namespace.
import { ID_RE } from '@orbit/protocol/ids';
import { isTaskState, TASK_STATES, type TaskState } from '@orbit/protocol/states';
import type { Pool } from '../db/pool.js';
import { taskView } from '../db/tasks.js';
import { attemptView, listTaskAttempts } from '../db/attempts.js';
import { queuesByRef, queuesWithCounts, taskById, tasksOfQueue } from '../db/admin-reads.js';
import { one, parseArgs, parseFlags } from './args.js';

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [fmt(header), ...rows.map(fmt)].join('\n') + '\n';
}

export const READ_USAGE = `  orbit-admin queues list [--json]
  orbit-admin tasks list --queue NAME|ID [--state STATE] [--limit N] [--json]
  orbit-admin task get ID [--json]`;

/** Checks the arguments before any database work; null when `argv` is not a read command. */
export function readCommand(argv: string[]): ((pool: Pool) => Promise<string>) | null {
  const [cmd, sub] = argv;
  if (cmd === 'queues' && sub === 'list') {
    const json = parseFlags(argv.slice(2), ['json'], []).has('json');
    return (pool) => queuesList(pool, json);
  }
  if (cmd === 'tasks' && sub === 'list') {
    const flags = parseFlags(argv.slice(2), ['json'], ['queue', 'state', 'limit']);
    const queue = one(flags, 'queue')!;
    const state = one(flags, 'state', false);
    if (state !== undefined && !isTaskState(state)) throw new Error(`--state ${state} is not one of ${TASK_STATES.join(', ')}`);
    const rawLimit = one(flags, 'limit', false) ?? '50';
    if (!/^[1-9][0-9]{0,3}$/.test(rawLimit) || Number(rawLimit) > 1000) throw new Error('--limit must be an integer in 1..1000');
    return (pool) => tasksList(pool, queue, state, Number(rawLimit), flags.has('json'));
  }
  if (cmd === 'task' && sub === 'get') {
    const { positional, flags } = parseArgs(argv.slice(2), ['json'], []);
    if (positional.length !== 1 || !ID_RE.test(positional[0]!)) throw new Error('usage: orbit-admin task get ID (a 32-hex task id)');
    return (pool) => taskGet(pool, positional[0]!, flags.has('json'));
  }
  return null;
}

async function queuesList(pool: Pool, json: boolean): Promise<string> {
  const rows = await queuesWithCounts(pool);
  const list = rows.map((r) => ({
    id: r.id as string,
    name: r.name as string,
    namespace: r.namespace as string,
    namespace_id: r.namespace_id as string,
    state: r.retired_at ? 'retired' : r.paused ? 'paused' : 'active',
    waiting: Number(r.waiting),
    running: Number(r.running),
    max_active_attempts: Number(r.max_active_attempts),
  }));
  if (json) return JSON.stringify({ queues: list }) + '\n';
  if (list.length === 0) return 'no queues\n';
  return table(
    ['ID', 'NAME', 'NAMESPACE', 'STATE', 'WAITING', 'RUNNING'],
    list.map((q) => [q.id, q.name, q.namespace, q.state, String(q.waiting), String(q.running)]),
  );
}

/** By name only when exactly one namespace has a queue of that name. */
async function findQueue(pool: Pool, ref: string): Promise<{ id: string; namespace_id: string }> {
  const rows = await queuesByRef(pool, ref);
  if (rows.length === 0) throw new Error(`no queue with id or name ${JSON.stringify(ref)}; \`orbit-admin queues list\` shows them`);
  if (rows.length > 1) {
    throw new Error(
      `${rows.length} namespaces have a queue named ${ref}; pass its id instead: ${rows.map((r) => `${r.id} (namespace ${r.namespace})`).join(', ')}`,
    );
  }
  return { id: rows[0]!.id, namespace_id: rows[0]!.namespace_id };
}

async function tasksList(pool: Pool, queueRef: string, state: TaskState | undefined, limit: number, json: boolean): Promise<string> {
  const q = await findQueue(pool, queueRef);
  const rows = await tasksOfQueue(pool, q.id, state, limit);
  const tasks = rows.map((r) => taskView(r, true));
  if (json) return JSON.stringify({ queue_id: q.id, tasks }) + '\n';
  if (tasks.length === 0) return `no tasks${state ? ` in state ${state}` : ''} in queue ${q.id}\n`;
  return table(
    ['ID', 'STATE', 'HANDLER', 'ATTEMPTS', 'CREATED', 'KEY'],
    tasks.map((t) => [t.id, t.state, `${t.handler}@${t.handler_version}`, `${t.attempts_made}/${t.max_attempts}`, t.created_at, t.concurrency_key ?? '-']),
  );
}

async function taskGet(pool: Pool, id: string, json: boolean): Promise<string> {
  const task = await taskById(pool, id);
  if (!task) throw new Error(`task ${id} not found`);
  const attempts = await listTaskAttempts(pool, task.namespace_id, id);
  const doc = { task: taskView(task), attempts: attempts.map(attemptView) };
  return JSON.stringify(doc, null, json ? undefined : 2) + '\n';
}
