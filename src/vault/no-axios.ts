/**
 * node-vault without axios. node-vault 0.12 requires axios at the top of its
 * index, but calls it (`axios.create`) only for a client built without the
 * `request-promise` option, and every client here has one: all calls go
 * through the Vault transport (http.ts, transport.ts). Loading axios anyway
 * cost about 120 ms of CPU and 7–10 MiB of RSS at the node's first Mount
 * (Node 20, measured against the stand-in's 17 ms and 0.3 MiB).
 *
 * So, before node-vault is first loaded, the module that `require('axios')`
 * resolves to from node-vault's own file is entered in Node's module cache
 * (require.cache, documented for adding entries) as a stand-in: node-vault
 * gets exactly that entry, and anything that ever calls it gets an error that
 * says why. An axios that is already loaded is left as it is.
 */
import { createRequire } from 'node:module'
import { enterStandIn } from '../util/module-cache.js'

/** What `require('axios')` gives node-vault in this process. */
export const AXIOS_STAND_IN: { readonly create: () => never } = Object.freeze({
  create: (): never => {
    throw new Error(
      "axios is not loaded in the Vault provider: every node-vault client must be given the 'request-promise' " +
        'option (src/vault/http.ts), which sends its calls through the Vault transport',
    )
  },
})

/** The file node-vault's `require('axios')` resolves to. */
export function axiosPathForNodeVault(): string {
  const nodeVaultIndex = createRequire(import.meta.url).resolve('node-vault')
  return createRequire(nodeVaultIndex).resolve('axios')
}

/** Enters the stand-in for axios in the module cache, unless axios is loaded already; idempotent. */
export function installAxiosStandIn(): void {
  enterStandIn(axiosPathForNodeVault(), AXIOS_STAND_IN)
}
