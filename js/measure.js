// PLACEHOLDER until the font branch lands (same API).
export const FONT_FAMILY = "'Liberation Sans', Arial, Helvetica, sans-serif";
export function measureText(text, fontSize, weight = 400) {
  let w = 0;
  for (const ch of String(text)) {
    if ("il.,:;|!'`".includes(ch)) w += 0.28;
    else if ("mwMW@%".includes(ch)) w += 0.85;
    else if (ch >= "A" && ch <= "Z") w += 0.67;
    else if (ch.codePointAt(0) > 0x2e80) w += 1.0;
    else w += 0.56;
  }
  return w * fontSize * (weight >= 600 ? 1.06 : 1);
}
export function truncateToWidth(text, maxWidth, fontSize, weight = 400) {
  const chars = Array.from(String(text));
  if (measureText(text, fontSize, weight) <= maxWidth) return String(text);
  let lo = 0;
  let hi = chars.length - 1;
  const fits = (k) => measureText(chars.slice(0, k).join("").trimEnd() + "\u2026", fontSize, weight) <= maxWidth;
  if (!fits(0)) return "";
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return chars.slice(0, lo).join("").trimEnd() + "\u2026";
}
