import { pino, type Logger } from 'pino';

/** Start-up and shutdown lines of the CLIs: always printed (whatever ORBIT_LOG_LEVEL says), as
 * pino JSON like every other line. */
export function lifecycleLogger(base: Record<string, unknown> = {}): Logger {
  return cliLogger('info', base);
}

/** A CLI's logger: pino JSON lines, errors and fatals on stderr (where a supervisor or a test
 * looks for why it stopped), the rest on stdout. */
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

/** JSON lines to stdout; never tokens or payloads (redacted by path in case one slips in). */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { ...base },
    redact: REDACT,
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
