import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * The structured logger. Secrets never go in here: tokens and keys are redacted by path as a guard.
 * `destination` (tests): where the lines go instead of standard output.
 */
export function createLogger(opts: { level?: string; name?: string; destination?: DestinationStream } = {}): Logger {
  const options: LoggerOptions = {
    name: opts.name ?? 'svcmail',
    level: opts.level ?? 'info',
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        'headers.cookie',
        '*.secret',
        '*.password',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
