import type { Message, Metafile } from 'esbuild'
/** The floor's entry, relative to the package root. */
export declare const FLOOR_ENTRY: string
/** The floor's bundle (its source map beside it), relative to the package root. */
export declare const FLOOR_BUNDLE: string
/** Builds the floor into `outfile` (default FLOOR_BUNDLE under the package root). */
export declare function buildFloor(outfile?: string): Promise<{ warnings: Message[]; metafile: Metafile }>
