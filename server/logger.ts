import { pino, type Logger } from 'pino';

/** Tokens and payloads are redacted by path in case one slips into a log line. */
const options = (level: string, base: Record<string, unknown>) => ({
  level,
  base: { ...base },
  redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'payload', '*.payload'], censor: '[redacted]' },
  timestamp: pino.stdTimeFunctions.isoTime,
});

/** Start-up and shutdown lines of the CLIs, printed whatever ORBIT_LOG_LEVEL says; errors on stderr
 * too, where a supervisor or a test looks for why a CLI stopped. */
export function lifecycleLogger(base: Record<string, unknown> = {}): Logger {
  const streams = pino.multistream(
    [
      { level: 'trace', stream: pino.destination({ fd: 1, sync: true }) },
      { level: 'error', stream: pino.destination({ fd: 2, sync: true }) },
    ],
    { dedupe: true },
  );
  return pino(options('info', base), streams);
}

export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino(options(level, base));
}
