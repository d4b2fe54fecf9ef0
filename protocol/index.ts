// Everything of the wire contract in one import; the subpaths (@orbit/protocol/frames, …) load less.
export * from './errors.js';
export * from './frames.js';
export * from './http-schemas.js';
export * from './http-views.js';
export * from './workflow-schemas.js';
export * from './workflow-views.js';
export * from './validation.js';
export * from './ids.js';
export * from './strings.js';
export * from './limits.js';
export * from './primitives.js';
export * from './states.js';
