// An error as the port's error checks read it (src/kafka/commit.ts isRetriable,
// isGenerationLost): a protocol `type` and a `retriable` flag (true unless said otherwise).
export class FakeKafkaError extends Error {
  constructor(
    message: string,
    readonly type?: string,
    options?: { cause?: unknown },
    readonly retriable = true,
  ) {
    super(message, options);
  }
}
