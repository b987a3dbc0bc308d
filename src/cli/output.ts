// Lines to stdout and stderr that survive a reader going away (`switchyard check-config
// | head -3`): the write error is noted instead of crashing the process with a stack trace.

export interface LineOutput {
  write(text: string): void;
  /** True once the reader went away (EPIPE) or the stream failed: stop producing output. */
  closed(): boolean;
}

/**
 * NOTE: Node ignores SIGPIPE, so a write to a pipe whose reader exited fails with EPIPE,
 * emitted as an 'error' event; without a listener that event ends the process with a
 * stack trace. The listener turns it into `closed()`, and the commands that print a lot
 * (dlq list, replay) check it between batches and stop.
 */
export function guardedOutput(stream: NodeJS.WriteStream): LineOutput {
  let failed = false;
  stream.on('error', () => {
    failed = true;
  });
  const closed = () => failed || stream.destroyed || stream.writableEnded;
  return {
    write(text) {
      if (!closed()) stream.write(text);
    },
    closed,
  };
}
