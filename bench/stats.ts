// Small statistics shared by the scenarios and the report.

/** The median; of an even count, the mean of the two middle values (two start-ups of 129 and 198 ms are 163.5, not 129). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}
