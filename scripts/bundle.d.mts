import type { Message, Metafile } from 'esbuild'
/** The daemon's entry in tsc's output, relative to the package root. */
export declare const DAEMON_ENTRY: string
/** The bundle the image runs, relative to the package root. */
export declare const DAEMON_BUNDLE: string
/** Builds the bundle (into `outfile`, default DAEMON_BUNDLE under the package root). */
export declare function bundle(outfile?: string): Promise<{ warnings: Message[]; metafile: Metafile }>
