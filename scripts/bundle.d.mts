import type { Message, Metafile } from 'esbuild'
/** The daemon's entry in tsc's output, relative to the package root. */
export declare const DAEMON_ENTRY: string
/** The daemon's modules joined (CommonJS in a function expression), relative to the package root. */
export declare const DAEMON_BUNDLE: string
/** The launcher in tsc's output, and bundled: the file the image runs, relative to the package root. */
export declare const LAUNCHER_ENTRY: string
export declare const LAUNCHER_BUNDLE: string
/** Builds the joined modules and the launcher into `outDir` (default dist/ under the package root). */
export declare function bundle(
  outDir?: string,
): Promise<{ warnings: Message[]; metafile: Metafile; launcherMetafile: Metafile }>
/** The packages inside the bundle (with what they require): those the daemon loads before its socket serves. */
export declare const EAGER_PACKAGES: readonly string[]
/** The package a bare import names: `@scope/name/...` or `name/...`. */
export declare function packageOf(spec: string): string
/** Packages an eager package requires only on paths the daemon never takes: left outside the bundle. */
export declare const NEVER_LOADED_DEPENDENCIES: readonly string[]
/** The bench's floor (bench/floor-provider.ts) in tsc's output, its launcher and its modules joined, relative to the package root. */
export declare const FLOOR_ENTRY: string
export declare const FLOOR_BUNDLE: string
export declare const FLOOR_MAIN_BUNDLE: string
/** Builds the floor's joined modules and launcher into `outDir` (default dist/bench/ under the package root). */
export declare function bundleFloor(
  outDir?: string,
): Promise<{ warnings: Message[]; metafile: Metafile; launcherMetafile: Metafile }>
