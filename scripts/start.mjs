#!/usr/bin/env node
// `npm start`: the embedded default on one machine — a local Kafka broker
// (unless KAFKA_BROKERS is set), a demo webhook receiver on :4000, and
// `switchyard all --config config/example.yaml`. Ctrl-C stops everything.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker } from './kafka/broker.mjs';
import { startDemoReceiver } from './demo-receiver.mjs';
import { createConnection } from 'node:net';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const say = (line) => process.stderr.write(`start: ${line}\n`);

function portTaken(port) {
  return new Promise((resolvePort) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolvePort(true);
    });
    socket.once('error', () => resolvePort(false));
  });
}

async function main() {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) {
    say('building (dist/ is missing)');
    const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
    if (build.status !== 0) process.exit(2);
  }
  let broker;
  let brokers = process.env.KAFKA_BROKERS;
  if (!brokers) {
    const port = (await portTaken(9092)) ? undefined : 9092;
    say(`starting a local Kafka broker${port ? ' on 127.0.0.1:9092' : ' (9092 is taken: on a free port)'}`);
    broker = await startBroker({ port, log: say, detached: true });
    brokers = broker.brokers;
    say(`Kafka ready at ${brokers}`);
  }
  const secret = process.env.HOOKS_MAIN_SECRET ?? 'demo-shared-secret';
  const receiver = await startDemoReceiver({ port: 4000, secret, print: (line) => process.stdout.write(`\n>>> ${line}\n\n`) });
  say('demo receiver listening on http://127.0.0.1:4000');

  const daemon = spawn(process.execPath, [main, 'all', '--config', join(root, 'config', 'example.yaml')], {
    cwd: root,
    env: { ...process.env, KAFKA_BROKERS: brokers },
    stdio: 'inherit',
    // Its own process group: Ctrl-C reaches only this script, which sends one SIGTERM.
    detached: true,
  });
  say('switchyard all: gateway http://127.0.0.1:8080, admin http://127.0.0.1:9464/metrics — Ctrl-C stops everything');

  let stopping = false;
  const cleanup = async (code) => {
    receiver.close();
    if (broker) {
      say('stopping the Kafka broker');
      await broker.stop();
    }
    process.exit(code);
  };
  const stop = () => {
    if (stopping) return;
    stopping = true;
    say('stopping switchyard');
    daemon.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  daemon.once('exit', (code, signal) => {
    if (!stopping) say(`switchyard exited (${signal ?? code})`);
    void cleanup(code ?? 2);
  });
}

main().catch((error) => {
  say(error.message);
  process.exit(2);
});
