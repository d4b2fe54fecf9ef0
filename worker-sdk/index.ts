// Public API of the Orbit worker SDK: the worker and the HTTP client. The fenced-resource helper
// (`@orbit/worker-sdk/fenced-resource`, needs mysql2) and the fake gateway
// (`@orbit/worker-sdk/testing`) are separate subpaths so that a plain worker loads neither.
export * from './worker-entry.js';
export * from './client-entry.js';
