export * from './client.js';
export * from './topics.js';
export * from './headers.js';
export * from './ensure-topics.js';
export * from './commit.js';
export * from './scan-topic.js';
