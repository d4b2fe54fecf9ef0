import { pino, type Logger } from 'pino';

/** Start-up and shutdown lines of the CLIs, printed whatever ORBIT_LOG_LEVEL says. */
export function lifecycleLogger(base: Record<string, unknown> = {}): Logger {
  return cliLogger('info', base);
}

/** Errors on stderr too, where a supervisor or a test looks for why a CLI stopped. */
export function cliLogger(level: string, base: Record<string, unknown> = {}): Logger {
  const streams = pino.multistream(
    [
      { level: 'trace', stream: pino.destination({ fd: 1, sync: true }) },
      { level: 'error', stream: pino.destination({ fd: 2, sync: true }) },
    ],
    { dedupe: true },
  );
  return pino({ level, base: { ...base }, redact: REDACT, timestamp: pino.stdTimeFunctions.isoTime }, streams);
}

const REDACT = { paths: ['token', '*.token', 'authorization', '*.authorization', 'payload', '*.payload'], censor: '[redacted]' };

/** Tokens and payloads are redacted by path in case one slips into a log line. */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { ...base },
    redact: REDACT,
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
