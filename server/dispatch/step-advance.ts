// The hook through which a transaction that changed workflow step tasks advances their runs before
// its hot rows are written (docs/design.md "Workflows": a step's finish and its children's tasks
// commit with the event that finished it). Dispatch is the core and imports no other domain
// directory, so the workflow applier (server/workflows/apply.ts) registers itself here at start
// (gateway-main.ts). A transaction whose ledger noted no step task pays one length check.
import type { Tx } from '../db/pool.js';
import type { PermitLedger } from './ledger.js';

/** Advances the runs of the step tasks `ledger` noted; returns the queues that got new tasks. */
export type StepAdvancer = (tx: Tx, ledger: PermitLedger) => Promise<string[]>;

let advancer: StepAdvancer | null = null;

export function setStepAdvancer(fn: StepAdvancer): void {
  advancer = fn;
}

/** Called by every site that changes task states (results, the sweeper, task :cancel/:resolve),
 * after the task rows and before the ledger's hot rows. */
export async function advanceSteps(c: Tx, ledger: PermitLedger): Promise<string[]> {
  if (ledger.stepTasks.length === 0) return [];
  // Never silently: a step task that changed without its run advancing would leave the run stuck.
  if (!advancer) throw new Error('workflow step tasks changed but no advancer is registered (setStepAdvancer)');
  const queues = await advancer(c, ledger);
  for (const q of queues) ledger.freedQueues.add(q);
  return queues;
}
