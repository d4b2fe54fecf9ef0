// The fault gateway's controls (bench/fault-gateway.ts: the real node with its pool tapped and its
// handlers wrapped from outside): start it with useGatewayFixture({ script: FAULT_GATEWAY }), then
// arm a fault with `fault(f.gw, …)`, which resolves once the process has armed it.
import type { FaultCommand } from '../../bench/fault-gateway.js';
import type { GatewayProcess } from './gateway.js';

export type { FaultCommand, FaultPoint } from '../../bench/fault-gateway.js';

export const FAULT_GATEWAY = 'dist/bench/fault-gateway.js';

let lastId = 0;

/** Sends `command` to the fault gateway `gw` and waits for its answer. */
export async function fault(gw: GatewayProcess, command: FaultCommand): Promise<void> {
  const id = ++lastId;
  const child = gw.child;
  if (!child.send) throw new Error('not a fault gateway (no IPC channel): start it with script FAULT_GATEWAY');
  await new Promise<void>((resolve, reject) => {
    const onMessage = (m: { id?: number }) => {
      if (m.id !== id) return;
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send({ id, command }, (err) => {
      if (err) {
        child.off('message', onMessage);
        reject(err);
      }
    });
  });
}

/** The next `n` transactions of `path` (db/pool.ts TxPath) fail with MariaDB error `errno`; n = 0 disarms. */
export function failTransactions(gw: GatewayProcess, path: string, errno: number, n: number): Promise<void> {
  return fault(gw, { path, errno, n });
}
