// A webhook receiver in a process of its own (HTTP on 127.0.0.1, port 0) that answers
// 200 at once, or a fixed mix of answers, and counts what it got per path and messageId. NOTE: a receiver inside the
// test's process shares its event loop with the deliverer under test; under a burst the
// deliverer's work then delays the receiver's reading, and requests time out that a real
// receiver would have answered at once.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

const SCRIPT = `
const { createServer } = require('node:http');
const mix = JSON.parse(process.env.RECEIVER_MIX || 'null');
const counts = new Map();
const accepted = new Map();
let index = 0;
// A fixed pseudo-random number per request (Knuth's multiplicative hash of its index).
const roll = (i) => ((i * 2654435761) % 4294967296) / 4294967296;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__counts') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requests: Object.fromEntries(counts), accepted: Object.fromEntries(accepted) }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const id = /"messageId":"([^"]+)"/.exec(Buffer.concat(chunks).toString('utf8'))?.[1] ?? '';
    const key = req.url + ' ' + id;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const r = mix === null ? 0 : roll(index++);
    if (mix === null || r < mix.ok) {
      accepted.set(key, (accepted.get(key) ?? 0) + 1);
      res.writeHead(200);
      res.end();
    } else if (r < mix.ok + mix.unavailable) {
      res.writeHead(503);
      res.end();
    } else {
      setTimeout(() => { res.writeHead(200); res.end(); }, mix.slowMs);
    }
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

export interface ProcessReceiver {
  url(path?: string): string;
  /** How many requests each `<path> <messageId>` got, and how many of them it answered 200 at once. */
  counts(): Promise<{ requests: Record<string, number>; accepted: Record<string, number> }>;
  close(): Promise<void>;
}

/** Shares of the answers: 200 at once, 503 at once, the rest 200 after `slowMs`. */
export interface AnswerMix {
  ok: number;
  unavailable: number;
  slowMs: number;
}

export async function startProcessReceiver(mix?: AnswerMix): Promise<ProcessReceiver> {
  // NOTE: stdin stays open as the child's leash: when the test process dies, the receiver ends too.
  const env = { ...process.env, RECEIVER_MIX: JSON.stringify(mix ?? null) };
  const child: ChildProcess = spawn(process.execPath, ['-e', SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'], env });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  if (!Number.isInteger(port) || port <= 0) throw new Error(`process receiver: no port from the child (got ${JSON.stringify(line.toString())})`);
  const base = `http://127.0.0.1:${port}`;
  return {
    url: (path = '/') => `${base}${path}`,
    async counts() {
      const res = await fetch(`${base}/__counts`);
      return (await res.json()) as { requests: Record<string, number>; accepted: Record<string, number> };
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.stdin!.end();
      await exited;
    },
  };
}
