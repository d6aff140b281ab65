"use strict";

// visible makes every character of s seen for what it is, for text a
// person decides on: what a call will run, a question to answer. It is
// the twin of render.Visible (internal/render/visible.go), which the chat
// platforms and the CLI show, and a test runs both over the same table of
// cases (internal/render/testdata/visible.json): change them together.
//
// A run of four or more of any one character is shown once with its count
// ("␠×2600", "a×8"); a newline is ↵ and a tab ⇥; a character that prints
// blank or nothing (other white space, controls, format, bidirectional and
// default-ignorable characters, variation selectors, private-use and
// unassigned code points, U+2800, U+1D159, U+16FE4) is written as its code
// point ("⟨U+3164⟩"), and so is a combining mark with no character shown
// as itself to sit on or stacked more than two deep, and each of the
// characters these marks are made of. A word whose letters mix scripts,
// beyond the mixes a language writes, is followed by the letters not of
// its main script: "gіthub.com ⟨Cyrillic і⟩".
const visible = (() => {
  const collapseAt = 4;
  const maxMarks = 2;
  const maxListed = 8;
  const markChars = "⟨⟩×␠↵⇥";
  const wordEnds = "\"'`()[]{}<>,;|&=";
  const spaceRe = /^\p{White_Space}$/u;
  const invisibleRe = /^[\p{C}\p{Default_Ignorable_Code_Point}\p{Variation_Selector}\u2800\u{1D159}\u{16FE4}]$/u;
  const markRe = /^[\p{Mn}\p{Me}]$/u;
  const letterRe = /^\p{L}$/u;
  const isSpace = (c) => spaceRe.test(c);
  const isInvisible = (c) => invisibleRe.test(c);
  const isMark = (c) => markRe.test(c);
  const isLetter = (c) => letterRe.test(c);
  const code = (c) => "⟨U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟩";

  // Unicode's scripts but Common and Inherited, as Go's unicode package
  // names them.
  const scripts = [
     "Adlam", "Ahom", "Anatolian_Hieroglyphs", "Arabic", "Armenian", "Avestan", "Balinese",
     "Bamum", "Bassa_Vah", "Batak", "Bengali", "Bhaiksuki", "Bopomofo", "Brahmi",
     "Braille", "Buginese", "Buhid", "Canadian_Aboriginal", "Carian", "Caucasian_Albanian",
     "Chakma", "Cham", "Cherokee", "Chorasmian", "Coptic", "Cuneiform", "Cypriot",
     "Cypro_Minoan", "Cyrillic", "Deseret", "Devanagari", "Dives_Akuru", "Dogra",
     "Duployan", "Egyptian_Hieroglyphs", "Elbasan", "Elymaic", "Ethiopic", "Georgian",
     "Glagolitic", "Gothic", "Grantha", "Greek", "Gujarati", "Gunjala_Gondi", "Gurmukhi",
     "Han", "Hangul", "Hanifi_Rohingya", "Hanunoo", "Hatran", "Hebrew", "Hiragana",
     "Imperial_Aramaic", "Inscriptional_Pahlavi", "Inscriptional_Parthian", "Javanese",
     "Kaithi", "Kannada", "Katakana", "Kawi", "Kayah_Li", "Kharoshthi",
     "Khitan_Small_Script", "Khmer", "Khojki", "Khudawadi", "Lao", "Latin", "Lepcha",
     "Limbu", "Linear_A", "Linear_B", "Lisu", "Lycian", "Lydian", "Mahajani", "Makasar",
     "Malayalam", "Mandaic", "Manichaean", "Marchen", "Masaram_Gondi", "Medefaidrin",
     "Meetei_Mayek", "Mende_Kikakui", "Meroitic_Cursive", "Meroitic_Hieroglyphs", "Miao",
     "Modi", "Mongolian", "Mro", "Multani", "Myanmar", "Nabataean", "Nag_Mundari",
     "Nandinagari", "New_Tai_Lue", "Newa", "Nko", "Nushu", "Nyiakeng_Puachue_Hmong",
     "Ogham", "Ol_Chiki", "Old_Hungarian", "Old_Italic", "Old_North_Arabian", "Old_Permic",
     "Old_Persian", "Old_Sogdian", "Old_South_Arabian", "Old_Turkic", "Old_Uyghur",
     "Oriya", "Osage", "Osmanya", "Pahawh_Hmong", "Palmyrene", "Pau_Cin_Hau", "Phags_Pa",
     "Phoenician", "Psalter_Pahlavi", "Rejang", "Runic", "Samaritan", "Saurashtra",
     "Sharada", "Shavian", "Siddham", "SignWriting", "Sinhala", "Sogdian", "Sora_Sompeng",
     "Soyombo", "Sundanese", "Syloti_Nagri", "Syriac", "Tagalog", "Tagbanwa", "Tai_Le",
     "Tai_Tham", "Tai_Viet", "Takri", "Tamil", "Tangsa", "Tangut", "Telugu", "Thaana",
     "Thai", "Tibetan", "Tifinagh", "Tirhuta", "Toto", "Ugaritic", "Vai", "Vithkuqi",
     "Wancho", "Warang_Citi", "Yezidi", "Yi", "Zanabazar_Square"
  ];
  // The sets of scripts one language writes together.
  const writings = [
    ["Latin", "Han", "Hiragana", "Katakana"],
    ["Latin", "Han", "Bopomofo"],
    ["Latin", "Han", "Hangul"],
  ];
  const scriptTests = new Map();
  const known = new Map(); // letter → its script, as found
  const scriptOf = (c) => {
    if (!known.has(c)) known.set(c, findScript(c));
    return known.get(c);
  };
  const findScript = (c) => {
    for (const name of scripts) {
      let re = scriptTests.get(name);
      if (re === undefined) {
        try {
          re = new RegExp("^\\p{Script=" + name + "}$", "u");
        } catch {
          re = null; // a script this browser does not know
        }
        scriptTests.set(name, re);
      }
      if (re && re.test(c)) return name;
    }
    return "";
  };

  // shown is how c is written once, after a character with marks combining
  // marks drawn on it (-1: after nothing a mark may be drawn on).
  const shown = (c, marks) => {
    if (c === " ") return " ";
    if (c === "\n") return "↵";
    if (c === "\t") return "⇥";
    if (isSpace(c) || isInvisible(c) || markChars.includes(c) ||
        (isMark(c) && (marks < 0 || marks >= maxMarks))) return code(c);
    return c;
  };

  // wordMark is what follows a word of letters ([script, letter, count]):
  // the letters not of its main script when its scripts mix.
  const wordMark = (letters) => {
    const order = [];
    const count = new Map();
    for (const [sc, , n] of letters) {
      if (!count.has(sc)) order.push(sc);
      count.set(sc, (count.get(sc) || 0) + n);
    }
    if (order.length < 2 || writings.some((set) => order.every((sc) => set.includes(sc)))) return "";
    let main = order[0];
    for (const sc of order) if (count.get(sc) > count.get(main)) main = sc;
    let out = "";
    for (const sc of order) {
      if (sc === main) continue;
      const listed = [];
      for (const [s2, c] of letters) if (s2 === sc && !listed.includes(c)) listed.push(c);
      out += " ⟨" + sc;
      for (let k = 0; k < listed.length; k++) {
        if (k === maxListed) {
          out += " …";
          break;
        }
        out += " " + listed[k];
      }
      out += "⟩";
    }
    return out;
  };

  return (s) => {
    const cs = Array.from(String(s));
    let out = "";
    let letters = [];
    let marks = -1;
    let esc = false;
    const endWord = () => {
      out += wordMark(letters);
      letters = [];
    };
    for (let i = 0; i < cs.length;) {
      const c = cs[i];
      let n = 1;
      while (i + n < cs.length && cs[i + n] === c) n++;
      if (esc || c === "\\" || isSpace(c) || wordEnds.includes(c)) {
        endWord();
      } else if (isLetter(c) && !isInvisible(c)) {
        const sc = scriptOf(c);
        if (sc) letters.push([sc, c, n]);
      }
      esc = c === "\\" && n % 2 === 1;
      i += n;
      if (n >= collapseAt) {
        out += (c === " " ? "␠" : shown(c, -1)) + "×" + n;
        marks = -1;
        continue;
      }
      for (; n > 0; n--) {
        const form = shown(c, marks);
        out += form;
        if (form !== c || isSpace(c)) marks = -1;
        else if (isMark(c)) marks++;
        else marks = 0;
      }
    }
    endWord();
    return out;
  };
})();

if (typeof module !== "undefined") module.exports = { visible }; // for the test under Node
