#!/usr/bin/env node
// The reaper: a tiny process that stops what `npm start` (or `npm run kafka`) started
// when that script is gone without stopping it itself — killed with SIGKILL, crashed,
// or ended by an OOM killer. Its parent tells it on stdin which pids to look after:
//
//   +PID   look after PID        -PID   forget PID (it exited, or was stopped cleanly)
//   !DIR   remove the folder DIR (absolute) once the pids are stopped (a test broker's data)
//
// NOTE: it needs no signal and no polling to notice its parent's end: the kernel closes
// the parent's end of the stdin pipe however the parent ended, and that is EOF here.
// Then it stops the pids it still looks after, last added first (the daemon before the
// broker it talks to): SIGTERM, then SIGKILL after a grace period; then it removes the
// folders it was given. A test runner stopped by Ctrl-C or SIGINT without its teardown
// (vitest) so leaves no broker and no data in /dev/shm (scripts/kafka/broker.mjs).
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { terminate } from './processes.mjs';

const GRACE_MS = 20_000;

/**
 * Starts a reaper for the calling process and returns { watch(pid), forget(pid), removeAtEnd(dir) }.
 * It runs in a session of its own (so a terminal's Ctrl-C or SIGHUP does not reach it)
 * and holds nothing of its parent's: no output, no event-loop reference.
 */
export function startReaper() {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  child.unref();
  child.stdin.on('error', () => undefined);
  const send = (line) => {
    if (child.stdin.writable) child.stdin.write(`${line}\n`);
  };
  // The pipe must not keep the parent alive once everything else is done.
  child.stdin.unref();
  return {
    pid: child.pid,
    watch: (pid) => send(`+${pid}`),
    forget: (pid) => send(`-${pid}`),
    removeAtEnd: (dir) => {
      if (isAbsolute(dir) && !dir.includes('\n')) send(`!${dir}`);
    },
  };
}

function main() {
  const watched = [];
  const folders = [];
  let pending = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('!')) {
        const dir = line.slice(1);
        if (isAbsolute(dir) && !folders.includes(dir)) folders.push(dir);
        continue;
      }
      const pid = Number(line.slice(1));
      if (!Number.isInteger(pid) || pid <= 0) continue;
      const at = watched.indexOf(pid);
      if (line.startsWith('+') && at < 0) watched.push(pid);
      if (line.startsWith('-') && at >= 0) watched.splice(at, 1);
    }
  });
  process.stdin.on('end', () => {
    void (async () => {
      for (const pid of [...watched].reverse()) await terminate(pid, { graceMs: GRACE_MS });
      for (const dir of folders) rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    })();
  });
  // Signals meant for the terminal's foreground group never reach a detached reaper; one
  // sent to it on purpose ends it, and it stops nothing.
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
