import { Writable } from 'node:stream';
import { EventEmitter, once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { logProcessWarnings, runServices } from '../../src/runtime/run-services.js';
import { onceStop, runAll } from '../../src/runtime/service.js';

describe('runAll', () => {
  it('runs every step even when an earlier one fails, then throws the failure', async () => {
    const ran: number[] = [];
    await expect(
      runAll([
        async () => {
          ran.push(1);
          throw new Error('first');
        },
        async () => {
          ran.push(2);
        },
      ]),
    ).rejects.toThrow('first');
    expect(ran).toEqual([1, 2]);
  });

  it('aggregates several failures', async () => {
    const failing = async () => {
      throw new Error('x');
    };
    await expect(runAll([failing, failing])).rejects.toThrow('2 shutdown steps failed');
  });
});

describe('onceStop', () => {
  it('shares one promise between calls and runs the routine once', async () => {
    let runs = 0;
    const stop = onceStop(async () => {
      runs += 1;
    });
    const a = stop();
    const b = stop();
    expect(a).toBe(b);
    await a;
    expect(runs).toBe(1);
  });
});

describe('logProcessWarnings', () => {
  it('logs a process warning as one pino JSON line instead of Node\'s stderr text', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const restore = logProcessWarnings(createLogger({ level: 'info', destination }));
    const stderr: string[] = [];
    const originalWrite = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      stderr.push(chunk.toString());
      return true;
    }) as typeof process.stderr.write;
    try {
      const warned = once(process, 'warning');
      // The warning seen in chaos runs: an 11th listener on one emitter.
      const socketLike = new EventEmitter();
      for (let i = 0; i < 11; i++) socketLike.on('connect', () => undefined);
      await warned;
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.stderr.write = originalWrite;
      restore();
    }
    expect(stderr.filter((line) => line.includes('MaxListenersExceededWarning'))).toEqual([]);
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]!) as { level: number; msg: string; warning: { name: string } };
    expect(entry.level).toBe(40);
    expect(entry.warning.name).toBe('MaxListenersExceededWarning');
    expect(entry.msg).toContain('11 connect listeners');
  });
});

describe('runServices', () => {
  it('names a service that could not start once, beside the logger\'s own `service` key', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const events = ['SIGTERM', 'SIGINT', 'unhandledRejection', 'uncaughtException', 'warning'];
    const listeners = (event: string) => process.listeners(event as 'warning') as unknown[];
    const before = new Map(events.map((event) => [event, listeners(event)]));
    try {
      const code = await runServices({
        services: [
          {
            name: 'broken',
            start: async () => {
              throw new Error('no broker');
            },
            stop: async () => undefined,
            health: () => ({ live: false, ready: false }),
          },
        ],
        shutdownTimeoutMs: 5_000,
        logger: createLogger({ level: 'info', destination }),
      });
      expect(code).toBe(2);
    } finally {
      // runServices installs process-wide handlers: take them off again.
      for (const event of events) {
        for (const listener of listeners(event)) {
          if (!before.get(event)!.includes(listener)) process.off(event, listener as () => void);
        }
      }
    }
    const fatal = lines.find((line) => line.includes('could not start broken'));
    expect(fatal).toBeDefined();
    // JSON.parse keeps the last of two equal keys: count them in the raw line.
    expect(fatal!.match(/"service":/g)).toHaveLength(1);
    expect(JSON.parse(fatal!)).toMatchObject({ level: 60, service: 'switchyard', component: 'broken' });
  });
});
