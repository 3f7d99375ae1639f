#include "command_docs.hpp"

#include <cctype>

#include "words.hpp"

namespace fg {

namespace {

// The syntax line's words: "[", "]", "|", "..." and the rest ("key", "EX"); a "|" between
// two words with no space ("BEFORE|AFTER") stays inside one word: a choice of those words.
std::vector<std::string> syntax_words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    // (a word that ends in "...", "params...": the word, given many times: "+...")
    if (cur.size() > 3 && cur.compare(cur.size() - 3, 3, "...") == 0) {
      out.push_back(cur.substr(0, cur.size() - 3));
      out.push_back("+...");
    } else {
      out.push_back(cur);
    }
    cur.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const bool tight_bar = ch == '|' && !cur.empty() && i + 1 < s.size() && s[i + 1] != ' ';
    if (tight_bar) {
      cur += ch;
    } else if (ch == '[' || ch == ']' || ch == '|') {
      flush();
      out.push_back(std::string(1, ch));
    } else if (ch == ' ') {
      flush();
    } else {
      cur += ch;
    }
  }
  flush();
  return out;
}

bool upper_word(const std::string& w) {
  bool letter = false;
  for (const char ch : w) {
    if (std::islower(static_cast<unsigned char>(ch))) return false;
    letter = letter || std::isupper(static_cast<unsigned char>(ch));
  }
  return letter;
}

std::string lower(std::string w) {
  for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return w;
}

// What a value named `name` is, by its name (Redis's types).
std::string value_type(const std::string& name) {
  static const char* const kKeys[] = {"key", "newkey", "source", "destination", "src", "dst"};
  static const char* const kIntegers[] = {
      "seconds", "milliseconds", "count",      "numkeys",    "index",     "start",
      "end",     "stop",         "offset",     "increment",  "decrement", "rank",
      "len",     "num-matches",  "limit",      "cursor",     "ms",        "bits",
      "delta",   "ttl_ms",       "lowerbound", "upperbound", "n",         "destination-db"};
  for (const char* k : kKeys)
    if (name == k) return "key";
  if (name == "pattern") return "pattern";
  if (name.rfind("unix-time", 0) == 0) return "unix-time";
  if (name == "score" || name == "timeout" || name == "min" || name == "max") return "double";
  for (const char* k : kIntegers)
    if (name == k) return "integer";
  return "string";
}

// A oneof or a block named `name`, its parts to come.
DocArg arg_group(std::string name, const char* type) {
  DocArg g;
  g.name = std::move(name);
  g.type = type;
  return g;
}

bool same_shape(const DocArg& a, const DocArg& b) {
  if (a.name != b.name || a.type != b.type || a.token != b.token || a.args.size() != b.args.size())
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!same_shape(a.args[i], b.args[i])) return false;
  return true;
}

struct SyntaxReader {
  const std::vector<std::string>& w;
  size_t at = 0;

  // A sequence up to "]", "|" or the end.
  std::vector<DocArg> sequence() {
    std::vector<DocArg> seq;
    while (at < w.size() && w[at] != "]" && w[at] != "|") {
      const std::string& word = w[at];
      if (word == "..." || word == "+...") {  // the last one, many times
        ++at;
        if (!seq.empty()) seq.back().multiple = true;
        // ("[key ...]": a repetition of what comes before the brackets)
        if (!seq.empty() && word == "...") seq.back().dots = true;
        continue;
      }
      if (word == "[") {
        ++at;
        DocArg group = choice();
        if (at < w.size() && w[at] == "]") ++at;
        // "key [key ...]": the arguments before it, many times; "[section ...]" alone: any
        // number of them
        if (group.dots) {
          const size_t n = group.args.size();
          bool same = seq.size() >= n;
          for (size_t i = 0; i < n && same; ++i)
            same = same_shape(seq[seq.size() - n + i], group.args[i]);
          if (same && n == 1) {
            seq.back().multiple = true;
            continue;
          }
          if (same) {
            const size_t from = seq.size() - n;
            DocArg block = arg_group("", "block");
            for (size_t i = from; i < seq.size(); ++i) {
              block.name += (block.name.empty() ? "" : "-") + seq[i].name;
              block.args.push_back(std::move(seq[i]));
            }
            block.multiple = true;
            seq.resize(from);
            seq.push_back(std::move(block));
            continue;
          }
          group.dots = false;
          if (n == 1) {
            DocArg one = std::move(group.args[0]);
            group = std::move(one);
            group.multiple = true;
          }
        }
        group.optional = true;
        seq.push_back(std::move(group));
        continue;
      }
      ++at;
      DocArg a;
      if (word.find('|') != std::string::npos) {  // "LEFT|RIGHT": a choice of words
        a.type = "oneof";
        for (size_t from = 0; from <= word.size();) {
          const size_t bar = std::min(word.find('|', from), word.size());
          const std::string part = word.substr(from, bar - from);
          DocArg c;
          c.name = lower(part);
          c.type = upper_word(part) ? "pure-token" : value_type(part);
          if (upper_word(part)) c.token = part;
          a.name += (a.name.empty() ? "" : "-") + c.name;
          a.args.push_back(std::move(c));
          from = bar + 1;
        }
      } else if (upper_word(word)) {
        a.token = word;
        // "EX seconds": a token and its value, one argument
        if (at < w.size() && !upper_word(w[at]) && w[at] != "[" && w[at] != "]" && w[at] != "|" &&
            w[at] != "..." && w[at] != "+..." && w[at].find('|') == std::string::npos) {
          a.name = w[at++];
          a.type = value_type(a.name);
        } else {
          a.name = lower(word);
          a.type = "pure-token";
        }
      } else {
        a.name = word;
        a.type = value_type(word);
      }
      seq.push_back(std::move(a));
    }
    return seq;
  }

  // Choices apart by "|", each a sequence: one argument (a choice of one is itself, a
  // sequence of several a block); a trailing "..." inside makes the whole group multiple.
  DocArg choice() {
    std::vector<DocArg> choices;
    while (true) {
      std::vector<DocArg> seq = sequence();
      if (seq.size() == 1) {
        choices.push_back(std::move(seq[0]));
      } else if (!seq.empty()) {
        DocArg block = arg_group("", "block");
        for (DocArg& a : seq) {
          block.name += (block.name.empty() ? "" : "-") + a.name;
          block.args.push_back(std::move(a));
        }
        choices.push_back(std::move(block));
      }
      if (at < w.size() && w[at] == "|") {
        ++at;
        continue;
      }
      break;
    }
    if (choices.size() == 1) {
      DocArg one = std::move(choices[0]);
      // ("[key ...]", "[key value ...]": a repetition, which the sequence around it places)
      DocArg* last = one.type == "block" ? &one.args.back() : &one;
      if (last->dots) {
        last->dots = false;
        last->multiple = false;
        if (one.type != "block") {
          DocArg block = arg_group(one.name, "block");
          block.args.push_back(std::move(one));
          one = std::move(block);
        }
        one.multiple = true;
        one.dots = true;
      }
      return one;
    }
    DocArg oneof = arg_group("", "oneof");
    for (DocArg& c : choices) {
      oneof.name += (oneof.name.empty() ? "" : "-") + c.name;
      oneof.args.push_back(std::move(c));
    }
    return oneof;
  }
};

void write_arg(RespWriter& w, const DocArg& a) {
  const bool has_flags = a.optional || a.multiple;
  w.map(2 + (a.token.empty() ? 0 : 1) + (a.type == "key" ? 1 : 0) + (has_flags ? 1 : 0) +
        (a.args.empty() ? 0 : 1));
  w.bulk("name");
  w.bulk(a.name);
  w.bulk("type");
  w.bulk(a.type);
  if (a.type == "key") {
    w.bulk("key_spec_index");
    w.integer(0);
  }
  if (!a.token.empty()) {
    w.bulk("token");
    w.bulk(a.token);
  }
  if (has_flags) {
    w.bulk("flags");
    w.array((a.optional ? 1 : 0) + (a.multiple ? 1 : 0));
    if (a.optional) w.simple("optional");
    if (a.multiple) w.simple("multiple");
  }
  if (!a.args.empty()) {
    w.bulk("arguments");
    w.array(a.args.size());
    for (const DocArg& c : a.args) write_arg(w, c);
  }
}

// A container's syntax, "GET parameter [parameter ...] | SET parameter value ... | HELP",
// cut at its top-level "|": each part's first word names a subcommand, the rest its syntax.
std::vector<std::pair<std::string, std::string>> subcommand_syntaxes(std::string_view syntax) {
  std::vector<std::pair<std::string, std::string>> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= syntax.size(); ++i) {
    const char ch = i < syntax.size() ? syntax[i] : '|';
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch != '|' || depth != 0) continue;
    std::string_view part = syntax.substr(from, i - from);
    from = i + 1;
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    const size_t sp = part.find(' ');
    const std::string name = lower(std::string(part.substr(0, sp)));
    if (name.empty() || name.find_first_of("[]|") != std::string::npos) continue;
    out.emplace_back(name, sp == std::string_view::npos ? "" : std::string(part.substr(sp + 1)));
  }
  return out;
}

void write_doc_map(RespWriter& w, const CommandSpec& c, const std::string& summary,
                   std::string_view syntax, bool container) {
  const std::vector<DocArg> args = container ? std::vector<DocArg>{} : parse_syntax(syntax);
  std::vector<std::pair<std::string, std::string>> subs;
  if (container) {
    for (auto& [name, sub_syntax] : subcommand_syntaxes(syntax)) {
      for (const SubcommandSpec& s : c.subcommands)
        if (name == s.name) subs.emplace_back(name, sub_syntax);
    }
  }
  w.map(4 + (args.empty() ? 0 : 1) + (subs.empty() ? 0 : 1));
  w.bulk("summary");
  w.bulk(summary);
  w.bulk("since");
  w.bulk(c.since);
  w.bulk("group");
  w.bulk(c.group);
  w.bulk("syntax");  // (Floodgate's: the line the arguments were read from)
  w.bulk(syntax);
  if (!args.empty()) {
    w.bulk("arguments");
    w.array(args.size());
    for (const DocArg& a : args) write_arg(w, a);
  }
  if (!subs.empty()) {
    w.bulk("subcommands");
    w.map(subs.size());
    for (const auto& [name, sub_syntax] : subs) {
      std::string upper = name;
      for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      w.bulk(std::string(c.name) + "|" + name);
      write_doc_map(w, c, std::string(c.summary) + " (" + upper + ")", sub_syntax, false);
    }
  }
}

}  // namespace

std::vector<DocArg> parse_syntax(std::string_view syntax) {
  const std::vector<std::string> words = syntax_words(syntax);
  SyntaxReader r{words};
  std::vector<DocArg> out;
  while (r.at < words.size()) {
    std::vector<DocArg> seq = r.sequence();
    for (DocArg& a : seq) out.push_back(std::move(a));
    if (r.at < words.size()) ++r.at;  // (a stray "]" or a top-level "|")
  }
  return out;
}

std::vector<std::string> command_tips(const CommandSpec& c) {
  std::vector<std::string> tips;
  if (c.tips != nullptr) {  // (the row's own, where its op does not say)
    std::string_view t = c.tips;
    while (!t.empty()) {
      const size_t sp = t.find(' ');
      tips.emplace_back(t.substr(0, sp));
      t = sp == std::string_view::npos ? std::string_view() : t.substr(sp + 1);
    }
  }
  const bool stated = c.tips != nullptr &&
                      std::string_view(c.tips).find("request_policy:") != std::string_view::npos;
  if (c.run.data == DataCmd::kNone || stated) return tips;
  const DataCmdInfo& op = data_cmd_info(c.run.data);
  if (op.merge == Merge::kNone || op.merge == Merge::kTogether) return tips;
  tips.insert(tips.begin(),
              op.every_shard ? "request_policy:all_shards" : "request_policy:multi_shard");
  if (op.merge == Merge::kSum) tips.emplace_back("response_policy:agg_sum");
  if (op.merge == Merge::kOk) tips.emplace_back("response_policy:all_succeeded");
  return tips;
}

void write_command_docs(RespWriter& w, const CommandSpec& c) {
  w.bulk(c.name);
  write_doc_map(w, c, c.summary, c.syntax, !c.subcommands.empty());
}

}  // namespace fg
