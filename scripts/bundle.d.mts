import type { BuildOptions, Message, Metafile } from 'esbuild'
/** The daemon's entry (src/main.ts), relative to the package root. */
export declare const DAEMON_ENTRY: string
/** The daemon's bundle, the file the image runs (its source map beside it), relative to the package root. */
export declare const DAEMON_BUNDLE: string
/** A package a dependency requires but the daemon never calls, left out of the bundle. */
export interface TrimmedPackage {
  name: string
  requiredBy: string
  why: string
  gain: string
}
export declare const TRIMMED: readonly TrimmedPackage[]
/** esbuild's options for one bundled entry (the daemon's; the bench's floor takes the same). */
export declare function bundleOptions(entry: string, outfile: string): BuildOptions
/** Builds the daemon into `outfile` (default DAEMON_BUNDLE under the package root). */
export declare function bundle(outfile?: string): Promise<{ warnings: Message[]; metafile: Metafile }>
