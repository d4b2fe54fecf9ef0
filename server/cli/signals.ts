import { lifecycleLogger } from '../logger.js';

/** Runs `stop` once, with a hard exit after `hardExitMs`; a second signal exits at once. */
export function installSignalHandlers(stop: () => Promise<void>, opts: { signals?: NodeJS.Signals[]; hardExitMs?: number } = {}): void {
  let stopping = false;
  const onSignal = () => {
    if (stopping) process.exit(130);
    stopping = true;
    setTimeout(() => process.exit(1), opts.hardExitMs ?? 10_000).unref();
    stop().then(
      () => process.exit(0),
      (err) => {
        lifecycleLogger().error({ err: (err as Error).message }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  for (const s of opts.signals ?? ['SIGINT', 'SIGTERM']) process.on(s, onSignal);
}
