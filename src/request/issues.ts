/**
 * The problems one parse of a SecretProviderClass finds, in the order the checks run: a Mount fails
 * with the first, `lint` reports them all. Bounded, since the text is the tenant's.
 */
import { isProviderError, ProviderError } from '../errors.js'

/** Problems kept of one parse; the rest are counted in one last "…and N more". */
export const MAX_ISSUES = 100

export class Issues {
  private readonly kept: ProviderError[] = []
  private more = 0
  private firstDropped: ProviderError | undefined

  add(issue: ProviderError): void {
    if (this.kept.length < MAX_ISSUES) {
      this.kept.push(issue)
      return
    }
    this.firstDropped ??= issue
    this.more += 1
  }

  /** `check`'s result; when it throws a ProviderError, that is kept as a problem and the result is undefined. */
  attempt<T>(check: () => T): T | undefined {
    try {
      return check()
    } catch (err) {
      if (!isProviderError(err)) throw err
      this.add(err)
      return undefined
    }
  }

  get none(): boolean {
    return this.kept.length === 0
  }

  /** Throws the first problem, the one a Mount fails with. */
  throwFirst(): void {
    if (this.kept.length > 0) throw this.kept[0]!
  }

  list(): ProviderError[] {
    if (this.firstDropped === undefined) return [...this.kept]
    const { code, fields } = this.firstDropped
    const parameter = fields.parameter === undefined ? {} : { parameter: fields.parameter }
    return [...this.kept, new ProviderError(code, `…and ${this.more} more problems`, parameter)]
  }
}
