/**
 * The top of a transport's chain (transport.ts): the answer's bytes, then Vault's status and body,
 * or the call's failure in the vocabulary of call-errors.ts, through which proxy if any.
 */
import type { Dispatcher } from 'undici'
import { VaultHttpError, errorBodyOf, parseRetryAfter, typedFailure, vaultErrorsOf } from './call-errors.js'
import { throughProxy, type ProxyRoute } from './proxy-failures.js'

export interface VaultAnswer {
  status: number
  /** JSON when it parses (BOM stripped), else the text; '' for no body. */
  body: unknown
  /** The Date header (doctor's clock check). */
  date?: string
}

/** The transport was closed (to make room) before this call went out: nothing was sent. */
export class TransportClosed extends Error {
  override readonly name = 'TransportClosed'
}

/** Like axios did: JSON when it parses (BOM stripped), else the text; '' for no body. */
function parseBody(buf: Buffer): unknown {
  let text = buf.toString('utf8')
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  if (text === '') return ''
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** The top of the chain: the answer's bytes, then Vault's status and body or the call's typed failure. */
export class AnswerHandler implements Dispatcher.DispatchHandler {
  private status = 0
  private headers: Record<string, string | string[] | undefined> = {}
  private readonly chunks: Buffer[] = []

  constructor(
    private readonly anyStatus: boolean,
    private readonly resolve: (a: VaultAnswer) => void,
    private readonly reject: (err: Error) => void,
    private readonly route: ProxyRoute | undefined,
    /** Told a successful answer's X-Vault-Index header (consistency.ts). */
    private readonly learnIndex: (header: string | string[] | undefined) => void = () => undefined,
  ) {}

  // undici takes a handler without onRequestStart for one of its older API.
  onRequestStart(): void {}

  onResponseStart(_c: unknown, status: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx interim answers are not the answer.
    if (status < 200) return
    this.status = status
    this.headers = headers
  }

  onResponseData(_c: unknown, chunk: Buffer): void {
    this.chunks.push(chunk)
  }

  onResponseEnd(): void {
    const body = parseBody(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks))
    const date = this.headers.date
    // Vault answers 200 or 204; any other status (206, 299, ...) is not an answer to use.
    if (this.status === 200 || this.status === 204) this.learnIndex(this.headers['x-vault-index'])
    if (this.anyStatus || this.status === 200 || this.status === 204) {
      this.resolve({ status: this.status, body, date: typeof date === 'string' ? date : undefined })
    } else {
      const retryAfter = parseRetryAfter(this.headers['retry-after'])
      this.reject(new VaultHttpError(this.status, vaultErrorsOf(body), retryAfter, errorBodyOf(body)))
    }
  }

  onResponseError(_c: unknown, err: Error): void {
    // A pool closed (to make room) refuses the call before sending it.
    if ((err as { code?: unknown }).code === 'UND_ERR_CLOSED') return this.reject(new TransportClosed(err.message))
    const typed = typedFailure(err, this.status !== 0)
    this.reject(this.route ? throughProxy(this.route, typed) : typed)
  }
}
