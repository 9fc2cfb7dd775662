/**
 * Where `serve --demo` keeps its corpus unless --data says otherwise. A
 * module of its own so that `serve` can parse its flags and listen without
 * loading the demo's generator (demo.ts).
 */
export const DEMO_DATA_DIR = './.demo-data';
