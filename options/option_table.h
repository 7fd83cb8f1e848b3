// OptionTable<Config>: the options of one config type, each an OptionSpec (options/option_spec.h)
// bound to the field it sets. A declaration is the one place an option exists:
//
//   OptionTable<PipelineConfig> t;
//   t.Field("queue-depth", OptionType::kCount, [](auto& c) -> auto& { return
//   c.streaming.queue_depth; })
//       .Range(1, 32768)
//       .Help("reads in flight")
//       .For(kTrainCommand | kReadCommand | kLoaderApi)
//       .OnlyWith("mode", {"streaming"}, "it sets the streaming reader and ring");
//
// The default is the field's value in a default-constructed Config, so the component's own
// default is the option's. A table includes another's options through a projection
// (TrainConfig's table includes PipelineConfig's through `c.pipeline`), so a shared option is
// declared once for every program.
//
// What a table does with a config (every face through the same calls):
//   Set          one option from a value: checked against its spec (range, words), then stored
//   Check        every option's current value against its spec (a config built in C++)
//   RefuseIdle   options given that do nothing with the others' values (OptionCondition)
//
// Thread safety: a table is built once (a function-local static) and only read after.
#pragma once

#include <deque>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/status.h"
#include "options/option_spec.h"

namespace rf {

// "--mode managed" / "mode='managed'": an option at a value, as `face` writes it in messages.
std::string OptionSettingText(const OptionSpec& s, const OptionValue& v, OptionFace face);
// Usage for option `idle`, given, that does nothing while `other` is `value` (cond.why).
Status IdleOptionStatus(const OptionSpec& idle, const OptionSpec& other, const OptionValue& value,
                        const OptionCondition& cond, OptionFace face);

template <typename Config>
class OptionTable {
 public:
  using Setter = std::function<Status(Config&, const OptionValue&)>;
  using Getter = std::function<OptionValue(const Config&)>;
  // The type of the field an accessor reaches.
  template <typename Access>
  using FieldType = std::remove_cvref_t<std::invoke_result_t<Access, Config&>>;
  struct Entry {
    OptionSpec spec;
    Setter set;
    Getter get;
  };

  // An option bound to a field through `access`, a lambda taking Config& or const Config&
  // (`[](auto& c) -> auto& { return c.x; }`). The field's type fits the option's: bool (kSwitch,
  // kOnOff), an unsigned integer (kCount, kByteSize; its largest value the default bound), a
  // signed one (kInteger), float or double (kNumber), std::string (kWord, kText),
  // std::vector<float> (kNumbers), std::vector<uint64_t> (kCounts), std::vector<std::string>
  // (kTexts).
  template <typename Access>
  OptionSpec& Field(std::string name, OptionType type, Access access) {
    using F = FieldType<Access>;
    OptionSpec s;
    s.name = std::move(name);
    s.type = type;
    if constexpr (std::is_integral_v<F> && !std::is_same_v<F, bool>) {
      s.min_int = std::is_signed_v<F> ? static_cast<int64_t>(std::numeric_limits<F>::min()) : 0;
      s.max_int = static_cast<uint64_t>(std::numeric_limits<F>::max());
    } else if constexpr (std::is_same_v<F, std::vector<uint64_t>>) {
      s.min_int = 0;
      s.max_int = std::numeric_limits<uint64_t>::max();
    } else if constexpr (std::is_floating_point_v<F> || std::is_same_v<F, std::vector<float>>) {
      s.min_real = -std::numeric_limits<float>::max();
      s.max_real = std::numeric_limits<float>::max();
      s.single_precision = !std::is_same_v<F, double>;
    }
    return Add(
        std::move(s),
        [access](Config& c, const OptionValue& v) {
          Store(access(c), v);
          return Status::Ok();
        },
        [access](const Config& c) { return Load(access(c)); });
  }

  // A kWord option over an enum field (or a std::optional of one, unset by default): each word
  // and the value it stands for. A word whose value an earlier word has already is an alias of
  // that word: taken, not listed in the rule ("bf16" after "bfloat16").
  template <typename Access>
  OptionSpec& Word(std::string name, Access access,
                   std::vector<std::pair<std::string, FieldType<Access>>> map) {
    OptionSpec s;
    s.name = std::move(name);
    s.type = OptionType::kWord;
    for (size_t i = 0; i < map.size(); ++i) {
      bool alias = false;
      for (size_t j = 0; j < i; ++j) alias = alias || map[j].second == map[i].second;
      (alias ? s.word_aliases : s.words).push_back(map[i].first);
    }
    return Add(
        std::move(s),
        [access, map](Config& c, const OptionValue& v) {
          for (const auto& [word, value] : map) {
            if (word == std::get<std::string>(v)) access(c) = value;
          }
          return Status::Ok();
        },
        [access, map](const Config& c) {
          for (const auto& [word, value] : map) {
            if (access(c) == value) return OptionValue(word);
          }
          return OptionValue(std::string());
        });
  }

  // An option its owner reads and writes itself (a spec text parsed into a struct). `spec`: its
  // declaration (the type's fields as the option's). `set` gets a value already checked against
  // the spec; its errors are Usage naming the option.
  OptionSpec& Custom(OptionSpec spec, Setter set, Getter get) {
    return Add(std::move(spec), std::move(set), std::move(get));
  }

  // Every option of `inner` that one of `users` takes, bound through `project` (a lambda
  // returning the Inner part of a Config& or const Config&).
  template <typename Inner, typename Project>
  void Include(const OptionTable<Inner>& inner, uint32_t users, Project project) {
    for (const typename OptionTable<Inner>::Entry& e : inner.entries()) {
      if ((e.spec.users & users) == 0) continue;
      OptionSpec s = e.spec;
      s.users &= users;
      Add(
          std::move(s),
          [set = e.set, project](Config& c, const OptionValue& v) { return set(project(c), v); },
          [get = e.get, project](const Config& c) { return get(project(c)); });
    }
  }

  const std::deque<Entry>& entries() const { return entries_; }

  // The entry of the name as `face` spells it ("queue-depth" or "no-verify"; "queue_depth").
  const Entry* Find(std::string_view key, OptionFace face) const {
    for (const Entry& e : entries_) {
      if (face == OptionFace::kCommandLine ? CommandLineKey(e.spec) == key
                                           : OptionName(e.spec, face) == key) {
        return &e;
      }
    }
    return nullptr;
  }
  // The entry of the spec name that one of `users` takes: a name may be declared more than once
  // for users that take it apart (ringfeed-convert's --dtype: the samples', the token ids').
  const Entry* FindByName(std::string_view name, uint32_t users = ~0u) const {
    for (const Entry& e : entries_) {
      if (e.spec.name == name && (e.spec.users & users) != 0) return &e;
    }
    return nullptr;
  }

  // The specs `users` take, with their defaults, in declaration order.
  std::vector<OptionSpec> Specs(uint32_t users) const {
    std::vector<OptionSpec> out;
    for (const Entry& e : entries_) {
      if ((e.spec.users & users) != 0) out.push_back(e.spec);
    }
    return out;
  }

  Status Set(Config* c, const Entry& e, const OptionValue& v, OptionFace face) const {
    RF_RETURN_IF_ERROR(CheckOptionValue(e.spec, v, face));
    return e.set(*c, v);
  }

  // Every option `users` take, as `c` holds it, within its spec.
  Status Check(const Config& c, uint32_t users, OptionFace face) const {
    for (const Entry& e : entries_) {
      if ((e.spec.users & users) != 0) RF_RETURN_IF_ERROR(CheckOptionValue(e.spec, e.get(c), face));
    }
    return Status::Ok();
  }

  // The option whose value in `c` makes `e` do nothing (an OnlyWith condition `e` declares that
  // `c` does not meet; *cond set to it where cond is not null), or null where `e` does something.
  const Entry* IdleBecause(const Config& c, const Entry& e,
                           const OptionCondition** cond = nullptr) const {
    for (const OptionCondition& only : e.spec.only_with) {
      const Entry* other = FindByName(only.option, e.spec.users);
      if (other == nullptr) continue;  // the program does not take it: nothing to contradict
      const std::string text = OptionValueText(other->spec, other->get(c));
      bool ok = false;
      for (const std::string& allowed : only.values) ok = ok || allowed == text;
      if (ok) continue;
      if (cond != nullptr) *cond = &only;
      return other;
    }
    return nullptr;
  }

  // The first option of `given` (spec names) that one of `users` takes and that does nothing with
  // `c`'s other options.
  Status RefuseIdle(const Config& c, const std::set<std::string>& given, OptionFace face,
                    uint32_t users = ~0u) const {
    for (const Entry& e : entries_) {
      if (given.count(e.spec.name) == 0 || (e.spec.users & users) == 0) continue;
      const OptionCondition* cond = nullptr;
      if (const Entry* other = IdleBecause(c, e, &cond); other != nullptr) {
        return IdleOptionStatus(e.spec, other->spec, other->get(c), *cond, face);
      }
    }
    return Status::Ok();
  }

 private:
  OptionSpec& Add(OptionSpec s, Setter set, Getter get) {
    s.default_value = get(defaults_);
    entries_.push_back({std::move(s), std::move(set), std::move(get)});
    return entries_.back().spec;
  }

  template <typename F>
  static void Store(F& field, const OptionValue& v) {
    if constexpr (std::is_same_v<F, bool>) {
      field = std::get<bool>(v);
    } else if constexpr (std::is_integral_v<F> && std::is_signed_v<F>) {
      // A checked value fits the field: the spec's bounds are within the field's.
      field = static_cast<F>(std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v)
                                                                : std::get<uint64_t>(v));
    } else if constexpr (std::is_integral_v<F>) {
      field = static_cast<F>(std::get<uint64_t>(v));
    } else if constexpr (std::is_floating_point_v<F>) {
      field = static_cast<F>(std::get<double>(v));
    } else if constexpr (std::is_same_v<F, std::string>) {
      field = std::get<std::string>(v);
    } else if constexpr (std::is_same_v<F, std::vector<uint64_t>>) {
      field = std::get<std::vector<uint64_t>>(v);
    } else if constexpr (std::is_same_v<F, std::vector<std::string>>) {
      field = std::get<std::vector<std::string>>(v);
    } else {
      const std::vector<double>& d = std::get<std::vector<double>>(v);
      field.assign(d.begin(), d.end());
    }
  }

  template <typename F>
  static OptionValue Load(const F& field) {
    if constexpr (std::is_same_v<F, bool>) {
      return field;
    } else if constexpr (std::is_integral_v<F> && std::is_signed_v<F>) {
      return static_cast<int64_t>(field);
    } else if constexpr (std::is_integral_v<F>) {
      return static_cast<uint64_t>(field);
    } else if constexpr (std::is_floating_point_v<F>) {
      return static_cast<double>(field);
    } else if constexpr (std::is_same_v<F, std::string> ||
                         std::is_same_v<F, std::vector<uint64_t>> ||
                         std::is_same_v<F, std::vector<std::string>>) {
      return field;
    } else {
      return std::vector<double>(field.begin(), field.end());
    }
  }

  std::deque<Entry> entries_;  // a deque: the specs handed out by reference stay where they are
  // What a default-made Config holds: each option's default is read from its field here, so the
  // default is stated once, where the field is declared.
  const Config defaults_{};
};

}  // namespace rf
