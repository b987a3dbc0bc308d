// What a connection gets before it has shown a reason to stay (docs/operations.md#threat-model):
// a cap on the connections of one client address, below the server's own cap, so that
// one address cannot take every slot; and a deadline for a first request, so that a
// socket that connects and says nothing (or half a request line) goes after about 2 s
// instead of holding a slot until the header timeout. Both the gateway and the admin
// server use it; every refusal they answer also closes its connection.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a new connection may go without a whole request. NOTE: a client that opens a
 * connection sends its request at once; 2 s leaves room for a slow network's first
 * round trips and is far below the header timeout (10 s) that held such sockets before.
 */
export const FIRST_REQUEST_TIMEOUT_MS = 2_000;

export interface ConnectionGuardOptions {
  /** Connections open at once from one client address; more are closed as they arrive. */
  maxPerAddress: number;
  /** How long a new connection may go without a whole request before it is closed. */
  firstRequestTimeoutMs: number;
  /** Called for each connection closed over maxPerAddress (to log and count it). */
  onRefused?: (address: string) => void;
  /** Ends a connection past its first-request deadline (e.g. with a 408); destroyed when absent. */
  onFirstRequestTimeout?: (socket: Socket) => void;
}

export interface ConnectionGuard {
  /** The connections open now per client address (for tests and logs). */
  openFrom(address: string): number;
}

/** Applies the guard to `server`'s connections from now on. */
export function guardConnections(server: Server, options: ConnectionGuardOptions): ConnectionGuard {
  const perAddress = new Map<string, number>();
  const firstRequestTimers = new WeakMap<Socket, NodeJS.Timeout>();

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const open = perAddress.get(address) ?? 0;
    if (open >= options.maxPerAddress) {
      options.onRefused?.(address);
      socket.destroy();
      return;
    }
    perAddress.set(address, open + 1);
    // NOTE: unref'd, so that a pending deadline never holds the process open on stop.
    const timer = setTimeout(() => {
      if (options.onFirstRequestTimeout === undefined || !socket.writable) socket.destroy();
      else options.onFirstRequestTimeout(socket);
    }, options.firstRequestTimeoutMs).unref();
    firstRequestTimers.set(socket, timer);
    socket.once('close', () => {
      clearTimeout(timer);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });
  // NOTE: a whole request ends the deadline: what happens next is the server's to decide
  // (a refusal closes the connection, an answered one keeps it alive).
  server.on('request', (req: { socket: Socket }) => {
    const timer = firstRequestTimers.get(req.socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    firstRequestTimers.delete(req.socket);
  });

  return { openFrom: (address) => perAddress.get(address) ?? 0 };
}
