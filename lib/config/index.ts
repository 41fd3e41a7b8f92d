/** The pipeline config: one typed, validated declaration with derived values. */
export * from './schema';
export * from './derive';
export * from './errors';
export * from './load';
export * from './source';
export * from './metrics';
export * from './tables';
export * from './on-first-use';
