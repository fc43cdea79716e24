import type { Message, Metafile } from 'esbuild'
/** The daemon's entry in tsc's output, relative to the package root. */
export declare const DAEMON_ENTRY: string
/** The bundle the image runs, relative to the package root. */
export declare const DAEMON_BUNDLE: string
/** Builds the bundle (into `outfile`, default DAEMON_BUNDLE under the package root). */
export declare function bundle(outfile?: string): Promise<{ warnings: Message[]; metafile: Metafile }>
/** The packages inside the bundle (with what they require): those the daemon loads before its socket serves. */
export declare const EAGER_PACKAGES: readonly string[]
/** The package a bare import names: `@scope/name/...` or `name/...`. */
export declare function packageOf(spec: string): string
/** Packages an eager package requires only on paths the daemon never takes: left outside the bundle. */
export declare const NEVER_LOADED_DEPENDENCIES: readonly string[]
/** The bench's floor (bench/floor-provider.ts) in tsc's output, and its bundle, relative to the package root. */
export declare const FLOOR_ENTRY: string
export declare const FLOOR_BUNDLE: string
/** Builds the floor's bundle (into `outfile`, default FLOOR_BUNDLE under the package root). */
export declare function bundleFloor(outfile?: string): Promise<{ warnings: Message[]; metafile: Metafile }>
