/** A point in time by which a Mount must have answered. */
export class Deadline {
  readonly expiresAt: number

  constructor(expiresAt: number) {
    this.expiresAt = expiresAt
  }

  static in(ms: number): Deadline {
    return new Deadline(Date.now() + ms)
  }

  /** The earlier of this deadline and `now + ms`. */
  capped(ms: number): Deadline {
    return new Deadline(Math.min(this.expiresAt, Date.now() + ms))
  }

  remainingMs(): number {
    return this.expiresAt - Date.now()
  }

  expired(): boolean {
    return this.remainingMs() <= 0
  }
}
