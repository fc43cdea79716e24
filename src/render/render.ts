/**
 * Vault responses + object specs -> files and object versions. Pure: every
 * check that the driver would make on the result happens here, with the
 * object named in the error.
 */
import { ProviderError, q } from '../errors.js'
import { filePathProblem, pathConflicts } from '../request/file-paths.js'
import type { SecretObject } from '../request/types.js'
import { decodeValue } from './encoding.js'
import { extractKey, wholeResponse } from './extract.js'
import { objectVersion } from './versions.js'

export interface RenderedFile {
  path: string
  mode: number
  contents: Buffer
}

export interface RenderedObject {
  id: string
  version: string
  files: RenderedFile[]
}

/** `label` names the object and the Vault request in error messages. */
export function renderObject(obj: SecretObject, body: unknown, defaultMode: number, label: string): RenderedFile[] {
  const mode = obj.filePermission ?? defaultMode
  let contents: Buffer
  if (obj.secretKey === undefined) {
    contents = Buffer.from(wholeResponse(body, label), 'utf8')
  } else {
    const { value, isString } = extractKey(body, obj.secretKey, label)
    if (!isString && obj.encoding !== 'utf-8') {
      throw new ProviderError(
        'DECODE_FAILED',
        `${label}: secretKey ${q(obj.secretKey)} holds a JSON ${value.startsWith('[') ? 'array' : 'value'}, not a string, so encoding ${q(obj.encoding)} cannot apply`,
      )
    }
    contents = decodeValue(value, obj.encoding, `${label}, secretKey ${q(obj.secretKey)}`)
  }
  return [{ path: obj.objectName, mode, contents }]
}

export function versionObject(obj: SecretObject, files: RenderedFile[], hmacKey: Buffer): RenderedObject {
  return { id: obj.objectName, version: objectVersion(hmacKey, obj.config, files), files }
}

/** The last gate before the response: the driver's path rules over the whole volume. */
export function checkVolume(objects: readonly RenderedObject[]): void {
  const owner = new Map<string, string>()
  for (const o of objects) {
    for (const f of o.files) {
      const problem = filePathProblem(f.path)
      if (problem) throw new ProviderError('BAD_FILE_PATH', `object ${q(o.id)}: file path ${q(f.path)} ${problem}`)
      owner.set(f.path, o.id)
    }
  }
  const { duplicates, nested } = pathConflicts(objects.flatMap((o) => o.files.map((f) => f.path)))
  if (duplicates.length > 0) {
    throw new ProviderError('BAD_FILE_PATH', `file ${q(duplicates[0]!)} would be written by more than one object`)
  }
  if (nested.length > 0) {
    const [dir, file] = nested[0]!
    throw new ProviderError(
      'BAD_FILE_PATH',
      `object ${q(owner.get(file) ?? file)} writes ${q(file)} inside ${q(dir)}, which object ${q(owner.get(dir) ?? dir)} writes as a file`,
    )
  }
}
