// Small process and port helpers shared by `npm start` (scripts/start.mjs), its reaper
// and the local broker script. Plain ESM, no dependencies.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Whether a process with this pid runs. A zombie (ended, not yet reaped: an orphan in a
 * container whose init does not reap) counts as ended.
 */
export function isAlive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    if (error.code !== 'EPERM') return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) state ..."; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** The command line of a process (Linux /proc), or undefined where it cannot be read. */
export function commandLineOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is alive and, where /proc tells, still runs a command containing
 * `marker` (so a pid file left by a reboot does not match an unrelated process that
 * got the same pid).
 */
export function isAliveAs(pid, marker) {
  if (!isAlive(pid)) return false;
  const command = commandLineOf(pid);
  return command === undefined || command.includes(marker);
}

const sleep = (ms) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/**
 * SIGTERM, then SIGKILL after graceMs; resolves once the process is gone (or after the
 * SIGKILL had a moment to land). For processes that are not our children, so it polls.
 */
export async function terminate(pid, { graceMs = 15_000 } = {}) {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  const killDeadline = Date.now() + 5_000;
  while (isAlive(pid) && Date.now() < killDeadline) await sleep(100);
}

/** Resolves true when `host:port` can be bound now (nothing else listens there). */
export function canListen(port, host) {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolveFree(true)));
  });
}

/**
 * The process that listens on a TCP port, as { pid, command }, from Linux's /proc;
 * undefined when it cannot be found (another OS, or another user's process).
 */
export function listenerOf(port) {
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      // st 0A is LISTEN; field 9 is the socket's inode.
      if (!local || fields[3] !== '0A') continue;
      if (Number.parseInt(local.split(':')[1] ?? '', 16) === port) inodes.add(fields[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  let pids;
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds;
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const match = /^socket:\[(\d+)\]$/.exec(target);
      if (match && inodes.has(match[1])) return { pid: Number(pid), command: commandLineOf(Number(pid)) ?? '?' };
    }
  }
  return undefined;
}
