"""Hand-written RAG question-answering cases in the shape of real LLM answers.

Each case is a web-search-style query, three retrieved passages of the kind a RAG system
gets back (about 60-100 words, MS MARCO-like), a faithful answer written the way chat models
answer from passages (paraphrase, synthesis across passages, mild hedges, an opening that
restates the question), and a hallucinated version of the same answer with one change of a
kind seen in real LLM answers (``kind``): a number or date changed, an entity swapped, a claim
stated more strongly than the passage, a detail no passage gives. ``changed`` is the sentence
that differs, so a miss can be read at a glance.

Written for this project (by its developers, not copied from any dataset), to develop the
response-level verdict on answers that paraphrase: ``bench/judge_rag_answers.py`` judges them.
"""

from __future__ import annotations

__all__ = ["CASES"]

CASES: list[dict] = [
    {
        "query": "how long does it take for a tattoo to heal",
        "chunks": [
            "Most tattoos take two to four weeks for the outer layer of skin to heal. During this time "
            "the tattoo may scab, peel and itch. The skin below the surface can take up to six months "
            "to heal completely, so aftercare should continue even after the tattoo looks healed.",
            "Tattoo artists recommend keeping a new tattoo covered for the first few hours, then washing "
            "it gently with fragrance-free soap twice a day. Avoid swimming, hot tubs and direct sunlight "
            "until the skin has fully healed.",
            "Larger tattoos and those with a lot of colour shading generally take longer to heal than "
            "small line work. Picking at scabs can pull out ink and lead to patchy results.",
        ],
        "answer": "A tattoo's outer layer of skin usually heals in about two to four weeks, during which "
        "it may scab, peel and itch. However, the deeper layers of skin can take as long as six months "
        "to fully heal. Larger tattoos with heavy colour shading tend to take longer than small line "
        "work. To help it heal, you should wash it gently with fragrance-free soap twice a day and avoid "
        "swimming and direct sunlight.",
        "hallucinated": "A tattoo's outer layer of skin usually heals in about two to four weeks, during "
        "which it may scab, peel and itch. However, the deeper layers of skin can take as long as a year "
        "to fully heal. Larger tattoos with heavy colour shading tend to take longer than small line "
        "work. To help it heal, you should wash it gently with fragrance-free soap twice a day and avoid "
        "swimming and direct sunlight.",
        "kind": "number changed",
        "changed": "the deeper layers of skin can take as long as a year to fully heal",
    },
    {
        "query": "what is the capital of australia and why",
        "chunks": [
            "Canberra is the capital city of Australia. It was chosen in 1908 as a compromise between "
            "Sydney and Melbourne, the two largest cities, which were rivals for the title. Construction "
            "of the city began in 1913 following an international design competition.",
            "The design competition for Canberra was won by the American architects Walter Burley Griffin "
            "and Marion Mahony Griffin. Parliament first met in Canberra in 1927; before that it sat in "
            "Melbourne.",
            "Sydney is Australia's largest city, with a population of more than five million. Melbourne "
            "is the second largest.",
        ],
        "answer": "The capital of Australia is Canberra. It was selected in 1908 as a compromise, because "
        "Sydney and Melbourne, the country's two biggest cities, both wanted to be the capital. Building "
        "began in 1913 after a design competition won by Walter Burley Griffin and Marion Mahony Griffin, "
        "and Parliament moved there from Melbourne in 1927.",
        "hallucinated": "The capital of Australia is Canberra. It was selected in 1908 as a compromise, "
        "because Sydney and Melbourne, the country's two biggest cities, both wanted to be the capital. "
        "Building began in 1913 after a design competition won by Walter Burley Griffin and Marion Mahony "
        "Griffin, and Parliament moved there from Sydney in 1927.",
        "kind": "entity swapped",
        "changed": "Parliament moved there from Sydney in 1927",
    },
    {
        "query": "does green tea help you lose weight",
        "chunks": [
            "Green tea contains catechins and caffeine, which some studies suggest may slightly increase "
            "the number of calories the body burns. However, the effect in most trials was small, and "
            "many studies found no significant difference in weight loss compared with a placebo.",
            "A 2012 review of 18 studies concluded that green tea preparations appear to induce a small, "
            "statistically non-significant weight loss in overweight or obese adults.",
            "Drinking green tea without added sugar is a low-calorie alternative to soft drinks, which "
            "can help people reduce their overall calorie intake.",
        ],
        "answer": "Green tea may help a little, but the evidence is weak. It contains catechins and "
        "caffeine, which might slightly raise the number of calories you burn. However, in most trials "
        "the effect was small, and a 2012 review of 18 studies found only a small weight loss that was "
        "not statistically significant. Unsweetened green tea can also replace sugary soft drinks, which "
        "lowers your overall calorie intake.",
        "hallucinated": "Green tea may help a little, but the evidence is weak. It contains catechins and "
        "caffeine, which raise the number of calories you burn by about 20 percent. However, in most "
        "trials the effect was small, and a 2012 review of 18 studies found only a small weight loss that "
        "was not statistically significant. Unsweetened green tea can also replace sugary soft drinks, "
        "which lowers your overall calorie intake.",
        "kind": "baseless detail",
        "changed": "which raise the number of calories you burn by about 20 percent",
    },
    {
        "query": "what is the difference between a crocodile and an alligator",
        "chunks": [
            "Alligators have a wide, U-shaped snout, while crocodiles have a longer, more pointed V-shaped "
            "snout. When a crocodile closes its mouth, the fourth tooth on the lower jaw remains visible; "
            "in alligators the lower teeth are hidden.",
            "Crocodiles have salt glands on their tongues and tolerate salt water, so they are often found "
            "in coastal areas. Alligators mostly live in freshwater marshes and lakes.",
            "American alligators are found only in the southeastern United States and in China, where the "
            "much smaller Chinese alligator lives along the Yangtze River.",
        ],
        "answer": "The easiest way to tell them apart is the snout: alligators have a broad U-shaped "
        "snout, whereas crocodiles have a narrower, pointed V-shaped one. With its mouth closed, a "
        "crocodile still shows the fourth tooth of its lower jaw, while an alligator's lower teeth are "
        "hidden. Crocodiles also have salt glands on their tongues, so they can live in salt water and "
        "are often found along coasts, whereas alligators mostly stay in freshwater marshes and lakes.",
        "hallucinated": "The easiest way to tell them apart is the snout: alligators have a broad "
        "U-shaped snout, whereas crocodiles have a narrower, pointed V-shaped one. With its mouth closed, "
        "an alligator still shows the fourth tooth of its lower jaw, while a crocodile's lower teeth are "
        "hidden. Crocodiles also have salt glands on their tongues, so they can live in salt water and "
        "are often found along coasts, whereas alligators mostly stay in freshwater marshes and lakes.",
        "kind": "roles swapped",
        "changed": "an alligator still shows the fourth tooth of its lower jaw, while a crocodile's",
    },
    {
        "query": "how much caffeine is safe per day",
        "chunks": [
            "For healthy adults, the FDA has cited 400 milligrams a day, about four or five cups of coffee, "
            "as an amount not generally associated with dangerous, negative effects. People vary in how "
            "sensitive they are to caffeine and how fast they metabolise it.",
            "Pregnant women are usually advised to limit caffeine to 200 milligrams a day. Children and "
            "adolescents should avoid energy drinks.",
            "Consuming more than 1,200 milligrams of caffeine in a short time can cause toxic effects such "
            "as seizures.",
        ],
        "answer": "For most healthy adults, up to 400 milligrams of caffeine a day, roughly four to five "
        "cups of coffee, is generally considered safe according to the FDA. Sensitivity varies from "
        "person to person, though. Pregnant women are usually advised to stay under 200 milligrams a day, "
        "and taking in more than 1,200 milligrams quickly can cause toxic effects like seizures.",
        "hallucinated": "For most healthy adults, up to 400 milligrams of caffeine a day, roughly four to "
        "five cups of coffee, is generally considered safe according to the FDA. Sensitivity varies from "
        "person to person, though. Pregnant women are usually advised to stay under 300 milligrams a day, "
        "and taking in more than 1,200 milligrams quickly can cause toxic effects like seizures.",
        "kind": "number changed",
        "changed": "stay under 300 milligrams a day",
    },
    {
        "query": "who invented the telephone",
        "chunks": [
            "Alexander Graham Bell was awarded the first US patent for the telephone in March 1876. Bell, "
            "a Scottish-born scientist, had been working on ways to transmit speech electrically.",
            "Elisha Gray filed a caveat for a similar device on the same day as Bell's application, which "
            "led to a long legal dispute. Italian inventor Antonio Meucci had also developed a voice "
            "communication device years earlier but could not afford to renew his patent caveat.",
            "Bell made the first successful telephone call on March 10, 1876, saying to his assistant, "
            "'Mr. Watson, come here, I want to see you.'",
        ],
        "answer": "Alexander Graham Bell is generally credited with inventing the telephone, since he "
        "received the first US patent for it in March 1876. He made the first successful call on March "
        "10, 1876, to his assistant Thomas Watson. However, the invention was disputed: Elisha Gray filed "
        "a caveat for a similar device on the same day, and Antonio Meucci had built a voice communication "
        "device years earlier.",
        "hallucinated": "Alexander Graham Bell is generally credited with inventing the telephone, since "
        "he received the first US patent for it in March 1876. He made the first successful call on March "
        "10, 1876, to his assistant Thomas Watson. However, the invention was disputed: Elisha Gray filed "
        "a caveat for a similar device a week later, and Antonio Meucci had built a voice communication "
        "device years earlier.",
        "kind": "date changed",
        "changed": "Elisha Gray filed a caveat for a similar device a week later",
    },
    {
        "query": "what causes northern lights",
        "chunks": [
            "The northern lights, or aurora borealis, happen when charged particles from the sun collide "
            "with gases in Earth's upper atmosphere. The particles are guided toward the poles by Earth's "
            "magnetic field.",
            "The colours depend on which gas is hit: oxygen produces green and red light, while nitrogen "
            "gives blue and purple hues. Green is the most common colour, produced by oxygen about 100 to "
            "300 kilometres up.",
            "Auroras are most visible during periods of high solar activity and on dark, clear nights far "
            "from city lights.",
        ],
        "answer": "The northern lights are caused by charged particles from the sun colliding with gases "
        "high in Earth's atmosphere, with Earth's magnetic field steering the particles toward the poles. "
        "The colour depends on the gas: oxygen gives off green and red light, and nitrogen produces blue "
        "and purple. Green, the most common colour, comes from oxygen at around 100 to 300 km altitude.",
        "hallucinated": "The northern lights are caused by charged particles from the sun colliding with "
        "gases high in Earth's atmosphere, with Earth's magnetic field steering the particles toward the "
        "poles. The colour depends on the gas: nitrogen gives off green and red light, and oxygen produces "
        "blue and purple. Green, the most common colour, comes from oxygen at around 100 to 300 km "
        "altitude.",
        "kind": "entities swapped",
        "changed": "nitrogen gives off green and red light, and oxygen produces blue and purple",
    },
    {
        "query": "how to get rid of hiccups",
        "chunks": [
            "Most bouts of hiccups go away on their own within a few minutes. Home remedies include "
            "holding your breath for a short time, sipping ice-cold water, and breathing into a paper bag.",
            "Hiccups are caused by involuntary contractions of the diaphragm. Eating too quickly, drinking "
            "carbonated beverages and sudden excitement can trigger them.",
            "Hiccups that last more than 48 hours are called persistent hiccups and may be a sign of an "
            "underlying medical condition; see a doctor if they continue that long.",
        ],
        "answer": "Hiccups usually stop by themselves within a few minutes. If you want to speed things "
        "up, you can try holding your breath briefly, sipping very cold water or breathing into a paper "
        "bag. They happen when your diaphragm contracts involuntarily, often after eating too fast or "
        "drinking fizzy drinks. If your hiccups last longer than 48 hours, you should see a doctor, as "
        "they may point to an underlying condition.",
        "hallucinated": "Hiccups usually stop by themselves within a few minutes. If you want to speed "
        "things up, you can try holding your breath briefly, sipping very cold water or breathing into a "
        "paper bag. They happen when your diaphragm contracts involuntarily, often after eating too fast "
        "or drinking fizzy drinks. If your hiccups last longer than 24 hours, you should see a doctor, as "
        "they may point to an underlying condition.",
        "kind": "number changed",
        "changed": "If your hiccups last longer than 24 hours",
    },
    {
        "query": "when was the eiffel tower built",
        "chunks": [
            "The Eiffel Tower was built between 1887 and 1889 as the entrance arch for the 1889 World's "
            "Fair, held to mark the centennial of the French Revolution. It was designed by the company of "
            "engineer Gustave Eiffel.",
            "At 300 metres, the tower was the tallest man-made structure in the world until the Chrysler "
            "Building in New York was finished in 1930.",
            "Many artists and intellectuals criticised the tower's design when it was proposed, but it "
            "became a global symbol of France.",
        ],
        "answer": "The Eiffel Tower was constructed from 1887 to 1889. It served as the entrance to the "
        "1889 World's Fair, which celebrated 100 years since the French Revolution, and was designed by "
        "Gustave Eiffel's company. At 300 metres tall, it remained the world's tallest man-made structure "
        "until New York's Chrysler Building was completed in 1930.",
        "hallucinated": "The Eiffel Tower was constructed from 1887 to 1889. It served as the entrance to "
        "the 1889 World's Fair, which celebrated 100 years since the French Revolution, and was designed "
        "by Gustave Eiffel's company. At 300 metres tall, it remained the world's tallest man-made "
        "structure until New York's Empire State Building was completed in 1930.",
        "kind": "entity swapped",
        "changed": "until New York's Empire State Building was completed in 1930",
    },
    {
        "query": "is it safe to eat raw cookie dough",
        "chunks": [
            "Eating raw cookie dough is risky because it usually contains raw eggs, which can carry "
            "Salmonella bacteria. Raw flour can also be contaminated with E. coli, since flour is not "
            "treated to kill germs.",
            "The CDC advises against tasting raw dough or batter, including dough for cookies, cakes and "
            "pizza. Children are at higher risk of severe illness.",
            "Edible cookie dough sold in stores is made with heat-treated flour and without raw eggs, so it "
            "is safe to eat without baking.",
        ],
        "answer": "It's generally not considered safe. Raw cookie dough typically contains raw eggs, which "
        "can carry Salmonella, and raw flour can be contaminated with E. coli because it isn't treated to "
        "kill germs. The CDC recommends not tasting any raw dough or batter. If you love the taste, "
        "store-bought edible cookie dough is a safer option, since it's made with heat-treated flour and "
        "no raw eggs.",
        "hallucinated": "It's generally not considered safe. Raw cookie dough typically contains raw eggs, "
        "which can carry Salmonella, and raw flour can be contaminated with E. coli because it isn't "
        "treated to kill germs. The CDC recommends not tasting any raw dough or batter. If you love the "
        "taste, store-bought edible cookie dough is a safer option, although it still contains a small "
        "amount of raw egg.",
        "kind": "contradiction",
        "changed": "although it still contains a small amount of raw egg",
    },
    {
        "query": "how many hours of sleep do teenagers need",
        "chunks": [
            "The American Academy of Sleep Medicine recommends that teenagers aged 13 to 18 get 8 to 10 "
            "hours of sleep per night on a regular basis.",
            "Surveys show that most high school students get less than 8 hours of sleep on school nights. "
            "Changes in the body clock during puberty make teens feel sleepy later at night.",
            "Not getting enough sleep is linked to poor concentration, lower grades, mood problems and a "
            "higher risk of car accidents among teen drivers.",
        ],
        "answer": "Teenagers between 13 and 18 should get 8 to 10 hours of sleep each night, according to "
        "the American Academy of Sleep Medicine. In practice, most high school students sleep less than 8 "
        "hours on school nights, partly because puberty shifts their body clock later. Too little sleep "
        "is associated with trouble concentrating, lower grades, mood problems and more car accidents.",
        "hallucinated": "Teenagers between 13 and 18 should get 8 to 10 hours of sleep each night, "
        "according to the American Academy of Pediatrics. In practice, most high school students sleep "
        "less than 8 hours on school nights, partly because puberty shifts their body clock later. Too "
        "little sleep is associated with trouble concentrating, lower grades, mood problems and more car "
        "accidents.",
        "kind": "entity swapped",
        "changed": "according to the American Academy of Pediatrics",
    },
    {
        "query": "what is the speed of light",
        "chunks": [
            "The speed of light in a vacuum is exactly 299,792,458 metres per second, a value fixed by the "
            "definition of the metre since 1983.",
            "Light travels slower in materials such as water or glass. In water its speed is about 225,000 "
            "kilometres per second.",
            "Light from the Sun takes about 8 minutes and 20 seconds to reach Earth.",
        ],
        "answer": "In a vacuum, light travels at exactly 299,792,458 metres per second, which is about "
        "300,000 kilometres per second. This value has been fixed by the definition of the metre since "
        "1983. Light moves more slowly through materials like water, where its speed is roughly 225,000 "
        "km/s. Sunlight takes around 8 minutes and 20 seconds to reach Earth.",
        "hallucinated": "In a vacuum, light travels at exactly 299,792,458 metres per second, which is "
        "about 300,000 kilometres per second. This value has been fixed by the definition of the metre "
        "since 1967. Light moves more slowly through materials like water, where its speed is roughly "
        "225,000 km/s. Sunlight takes around 8 minutes and 20 seconds to reach Earth.",
        "kind": "date changed",
        "changed": "fixed by the definition of the metre since 1967",
    },
    {
        "query": "benefits of intermittent fasting",
        "chunks": [
            "Intermittent fasting is an eating pattern that cycles between periods of fasting and eating. "
            "Common methods include the 16/8 method, which involves fasting for 16 hours each day, and the "
            "5:2 diet.",
            "Studies show intermittent fasting can help with weight loss and may improve insulin "
            "sensitivity. Some animal studies suggest it could extend lifespan, but this has not been "
            "shown in humans.",
            "Intermittent fasting is not recommended for people with a history of eating disorders, or for "
            "pregnant or breastfeeding women.",
        ],
        "answer": "Intermittent fasting alternates between periods of eating and fasting, for example the "
        "16/8 method (fasting 16 hours a day) or the 5:2 diet. Research suggests it can help you lose "
        "weight and may improve insulin sensitivity. Some animal research hints that it might extend "
        "lifespan, although this hasn't been demonstrated in people. It isn't advised for anyone with a "
        "history of eating disorders or for pregnant or breastfeeding women.",
        "hallucinated": "Intermittent fasting alternates between periods of eating and fasting, for "
        "example the 16/8 method (fasting 16 hours a day) or the 5:2 diet. Research suggests it can help "
        "you lose weight and may improve insulin sensitivity. It has also been shown to extend lifespan in "
        "humans by several years. It isn't advised for anyone with a history of eating disorders or for "
        "pregnant or breastfeeding women.",
        "kind": "contradiction",
        "changed": "It has also been shown to extend lifespan in humans by several years",
    },
    {
        "query": "what does a pharmacist do",
        "chunks": [
            "Pharmacists dispense prescription medications and advise patients on how to take them safely. "
            "They check prescriptions for possible drug interactions and incorrect doses.",
            "Many pharmacists also give flu shots and other vaccinations, and some provide health "
            "screenings such as blood pressure checks.",
            "In the United States, pharmacists must complete a Doctor of Pharmacy (PharmD) degree and pass "
            "a licensing exam.",
        ],
        "answer": "A pharmacist fills prescriptions and explains to patients how to use their medicines "
        "safely. They review each prescription for dangerous drug interactions and wrong doses. Many also "
        "administer vaccines such as flu shots and offer screenings like blood pressure checks. In the "
        "US, becoming a pharmacist requires a Doctor of Pharmacy (PharmD) degree and a passing score on a "
        "licensing exam.",
        "hallucinated": "A pharmacist fills prescriptions and explains to patients how to use their "
        "medicines safely. They review each prescription for dangerous drug interactions and wrong doses. "
        "Many also administer vaccines such as flu shots and offer screenings like blood pressure checks. "
        "In the US, becoming a pharmacist requires a Doctor of Pharmacy (PharmD) degree, a one-year "
        "residency and a passing score on a licensing exam.",
        "kind": "baseless detail",
        "changed": "a one-year residency",
    },
    {
        "query": "how long do cats live",
        "chunks": [
            "Indoor cats typically live 12 to 18 years, and many reach their early 20s. Outdoor cats tend "
            "to have much shorter lives because of traffic, disease and fights with other animals.",
            "The oldest cat on record, Creme Puff from Texas, lived to 38 years and 3 days.",
            "Regular veterinary checkups, a healthy diet and spaying or neutering can help cats live longer.",
        ],
        "answer": "Indoor cats usually live between 12 and 18 years, and plenty of them make it into their "
        "early twenties. Cats that live outdoors generally have shorter lives due to risks such as "
        "traffic, illness and fights. The oldest cat ever recorded, Creme Puff from Texas, reached 38 "
        "years of age. Regular vet visits, good nutrition and spaying or neutering can all help a cat "
        "live longer.",
        "hallucinated": "Indoor cats usually live between 12 and 18 years, and plenty of them make it "
        "into their early twenties. Cats that live outdoors generally have shorter lives due to risks such "
        "as traffic, illness and fights. The oldest cat ever recorded, Creme Puff from Florida, reached 38 "
        "years of age. Regular vet visits, good nutrition and spaying or neutering can all help a cat "
        "live longer.",
        "kind": "entity swapped",
        "changed": "Creme Puff from Florida",
    },
    {
        "query": "what is the boiling point of water at high altitude",
        "chunks": [
            "At sea level, water boils at 100 degrees Celsius (212 degrees Fahrenheit). As altitude "
            "increases, air pressure drops, and water boils at a lower temperature.",
            "For roughly every 300 metres of elevation gain, the boiling point of water falls by about 1 "
            "degree Celsius. In Denver, at about 1,600 metres, water boils at around 95 degrees Celsius.",
            "Because water boils at a lower temperature at high altitude, foods cooked in boiling water take "
            "longer to cook.",
        ],
        "answer": "Water boils at 100 °C (212 °F) at sea level, but the boiling point drops as you go "
        "higher because the air pressure is lower. As a rule of thumb, it falls by about 1 °C for every "
        "300 metres of elevation. In Denver, which sits at about 1,600 metres, water boils at roughly 95 "
        "°C, so food cooked in boiling water takes longer.",
        "hallucinated": "Water boils at 100 °C (212 °F) at sea level, but the boiling point drops as you "
        "go higher because the air pressure is lower. As a rule of thumb, it falls by about 1 °C for "
        "every 300 metres of elevation. In Denver, which sits at about 1,600 metres, water boils at "
        "roughly 95 °C, so food cooked in boiling water cooks faster.",
        "kind": "contradiction",
        "changed": "so food cooked in boiling water cooks faster",
    },
    {
        "query": "symptoms of vitamin d deficiency",
        "chunks": [
            "Vitamin D deficiency often causes no symptoms at first. When symptoms appear, they can include "
            "fatigue, bone pain, muscle weakness and mood changes such as depression.",
            "In children, severe vitamin D deficiency can cause rickets, a condition in which bones become "
            "soft and bend. In adults it can lead to osteomalacia.",
            "A blood test is the only way to know for sure whether you are deficient in vitamin D. People "
            "who get little sun exposure are at higher risk.",
        ],
        "answer": "Many people with low vitamin D have no symptoms at first. When symptoms do show up, "
        "they can include tiredness, bone pain, muscle weakness and low mood or depression. In children, "
        "a severe deficiency can lead to rickets, which softens and bends the bones, and in adults it can "
        "cause osteomalacia. The only reliable way to confirm a deficiency is a blood test.",
        "hallucinated": "Many people with low vitamin D have no symptoms at first. When symptoms do show "
        "up, they can include tiredness, bone pain, muscle weakness, hair loss and low mood or depression. "
        "In children, a severe deficiency can lead to rickets, which softens and bends the bones, and in "
        "adults it can cause osteomalacia. The only reliable way to confirm a deficiency is a blood test.",
        "kind": "baseless detail",
        "changed": "hair loss",
    },
    {
        "query": "who wrote pride and prejudice",
        "chunks": [
            "Pride and Prejudice is a novel by Jane Austen, first published in 1813. It follows Elizabeth "
            "Bennet as she deals with issues of manners, upbringing and marriage.",
            "Austen originally wrote the novel between 1796 and 1797 under the title First Impressions. It "
            "was rejected by a publisher before being revised.",
            "Jane Austen published her novels anonymously during her lifetime; her name appeared on them "
            "only after her death in 1817.",
        ],
        "answer": "Pride and Prejudice was written by Jane Austen and first published in 1813. She wrote "
        "the first version between 1796 and 1797, when it was called First Impressions, and revised it "
        "after a publisher turned it down. Like her other novels, it was published anonymously during her "
        "lifetime.",
        "hallucinated": "Pride and Prejudice was written by Jane Austen and first published in 1813. She "
        "wrote the first version between 1796 and 1797, when it was called First Impressions, and revised "
        "it after a publisher turned it down. Like her other novels, it was published under her own name "
        "during her lifetime.",
        "kind": "contradiction",
        "changed": "it was published under her own name during her lifetime",
    },
    {
        "query": "how does a heat pump work",
        "chunks": [
            "A heat pump moves heat rather than generating it. In winter it extracts heat from the outside "
            "air or ground and transfers it indoors; in summer it works in reverse to cool the home.",
            "Heat pumps use a refrigerant that absorbs heat as it evaporates and releases heat as it is "
            "compressed and condenses.",
            "Because they move heat instead of burning fuel, heat pumps can deliver three to four units of "
            "heat for every unit of electricity they use.",
        ],
        "answer": "A heat pump doesn't create heat; it moves it from one place to another. In the winter it "
        "pulls heat from the outdoor air or the ground and brings it inside, and in the summer it runs in "
        "reverse to cool your home. It does this with a refrigerant that absorbs heat when it evaporates "
        "and gives it off when it is compressed and condenses. Since it moves heat rather than burning "
        "fuel, a heat pump can provide three to four units of heat per unit of electricity.",
        "hallucinated": "A heat pump doesn't create heat; it moves it from one place to another. In the "
        "winter it pulls heat from the outdoor air or the ground and brings it inside, and in the summer "
        "it runs in reverse to cool your home. It does this with a refrigerant that absorbs heat when it "
        "evaporates and gives it off when it is compressed and condenses. Since it moves heat rather than "
        "burning fuel, a heat pump can provide ten units of heat per unit of electricity.",
        "kind": "number changed",
        "changed": "a heat pump can provide ten units of heat per unit of electricity",
    },
    {
        "query": "what is the population of japan",
        "chunks": [
            "Japan has a population of about 124 million people, making it the 11th most populous country "
            "in the world. Its population has been declining since 2010.",
            "More than 29 percent of Japan's population is aged 65 or older, the highest share of any "
            "country.",
            "Greater Tokyo is the most populous metropolitan area in the world, with around 37 million "
            "residents.",
        ],
        "answer": "Japan is home to roughly 124 million people, which makes it the world's 11th most "
        "populous country. Its population has been shrinking since 2010, and over 29% of Japanese people "
        "are 65 or older, the largest proportion of any country. Greater Tokyo alone has about 37 million "
        "residents, the most of any metropolitan area in the world.",
        "hallucinated": "Japan is home to roughly 124 million people, which makes it the world's 11th most "
        "populous country. Its population has been shrinking since 2000, and over 29% of Japanese people "
        "are 65 or older, the largest proportion of any country. Greater Tokyo alone has about 37 million "
        "residents, the most of any metropolitan area in the world.",
        "kind": "date changed",
        "changed": "shrinking since 2000",
    },
    {
        "query": "can dogs eat grapes",
        "chunks": [
            "Grapes and raisins are toxic to dogs and can cause sudden kidney failure, even in small "
            "amounts. The exact substance that causes the toxicity is not known.",
            "Symptoms of grape poisoning in dogs include vomiting, lethargy and diarrhoea, usually within "
            "12 hours of eating them.",
            "If your dog eats grapes or raisins, contact a veterinarian immediately. Early treatment greatly "
            "improves the chances of recovery.",
        ],
        "answer": "No, dogs should not eat grapes. Grapes and raisins are toxic to dogs and can trigger "
        "sudden kidney failure, even in small quantities, although scientists don't know exactly which "
        "substance is responsible. Signs of poisoning include vomiting, lethargy and diarrhoea, typically "
        "within 12 hours. If your dog eats any, call a vet right away, because early treatment makes "
        "recovery much more likely.",
        "hallucinated": "No, dogs should not eat grapes. Grapes and raisins are toxic to dogs and can "
        "trigger sudden kidney failure, but only if a dog eats more than a pound of them. Signs of "
        "poisoning include vomiting, lethargy and diarrhoea, typically within 12 hours. If your dog eats "
        "any, call a vet right away, because early treatment makes recovery much more likely.",
        "kind": "contradiction",
        "changed": "but only if a dog eats more than a pound of them",
    },
    {
        "query": "how tall is mount everest",
        "chunks": [
            "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas on the "
            "border between Nepal and China. In 2020, China and Nepal jointly announced its height as "
            "8,848.86 metres.",
            "The first confirmed ascent of Everest was made by Edmund Hillary of New Zealand and Tenzing "
            "Norgay, a Sherpa from Nepal, on 29 May 1953.",
            "Climbers usually need to spend several weeks acclimatising to the altitude before attempting "
            "the summit.",
        ],
        "answer": "Mount Everest stands 8,848.86 metres above sea level, a figure announced jointly by "
        "China and Nepal in 2020. It lies in the Himalayas on the Nepal-China border and is the highest "
        "mountain on Earth. Edmund Hillary and Tenzing Norgay made the first confirmed ascent on 29 May "
        "1953.",
        "hallucinated": "Mount Everest stands 8,848.86 metres above sea level, a figure announced jointly "
        "by China and Nepal in 2020. It lies in the Himalayas on the Nepal-China border and is the highest "
        "mountain on Earth. Edmund Hillary and Tenzing Norgay made the first confirmed ascent on 29 May "
        "1953, using a route that had never been attempted before.",
        "kind": "baseless detail",
        "changed": "using a route that had never been attempted before",
    },
    {
        "query": "what is a roth ira",
        "chunks": [
            "A Roth IRA is an individual retirement account in which you contribute money that has already "
            "been taxed. Your investments grow tax-free, and qualified withdrawals in retirement are not "
            "taxed.",
            "For 2024, the contribution limit for a Roth IRA is $7,000, or $8,000 for people aged 50 and "
            "older. Eligibility phases out at higher income levels.",
            "Unlike a traditional IRA, a Roth IRA has no required minimum distributions during the "
            "owner's lifetime.",
        ],
        "answer": "A Roth IRA is a retirement account that you fund with after-tax money. Your investments "
        "then grow tax-free, and qualified withdrawals in retirement aren't taxed. In 2024 you can "
        "contribute up to $7,000 a year, or $8,000 if you're 50 or older, although high earners may not "
        "be eligible. Unlike a traditional IRA, it has no required minimum distributions while you're "
        "alive.",
        "hallucinated": "A Roth IRA is a retirement account that you fund with after-tax money. Your "
        "investments then grow tax-free, and qualified withdrawals in retirement aren't taxed. In 2024 you "
        "can contribute up to $7,000 a year, or $8,000 if you're 55 or older, although high earners may "
        "not be eligible. Unlike a traditional IRA, it has no required minimum distributions while you're "
        "alive.",
        "kind": "number changed",
        "changed": "if you're 55 or older",
    },
    {
        "query": "why is the sky blue",
        "chunks": [
            "Sunlight is made of many colours. As it passes through the atmosphere, the shorter blue "
            "wavelengths are scattered by gas molecules much more than the longer red wavelengths. This "
            "is called Rayleigh scattering.",
            "Because blue light is scattered in all directions, we see blue coming from every part of the "
            "sky. Violet light is scattered even more, but our eyes are less sensitive to it.",
            "At sunrise and sunset, sunlight passes through more of the atmosphere, so more blue light is "
            "scattered away and the sky looks red and orange.",
        ],
        "answer": "The sky looks blue because of Rayleigh scattering. Sunlight contains all colours, and "
        "as it travels through the atmosphere, gas molecules scatter the short blue wavelengths far more "
        "than the longer red ones, so blue light reaches our eyes from every direction. Violet is "
        "scattered even more, but our eyes are less sensitive to it. At sunrise and sunset the light "
        "crosses more atmosphere, so the blue is scattered away and the sky turns red and orange.",
        "hallucinated": "The sky looks blue because of Rayleigh scattering. Sunlight contains all "
        "colours, and as it travels through the atmosphere, gas molecules scatter the long blue "
        "wavelengths far more than the shorter red ones, so blue light reaches our eyes from every "
        "direction. Violet is scattered even more, but our eyes are less sensitive to it. At sunrise and "
        "sunset the light crosses more atmosphere, so the blue is scattered away and the sky turns red "
        "and orange.",
        "kind": "contradiction",
        "changed": "scatter the long blue wavelengths far more than the shorter red ones",
    },
    {
        "query": "what are the side effects of ibuprofen",
        "chunks": [
            "Common side effects of ibuprofen include stomach pain, heartburn, nausea and dizziness. "
            "Taking it with food or milk can reduce stomach upset.",
            "Long-term use of ibuprofen or taking high doses can increase the risk of stomach ulcers, "
            "bleeding, heart attack and stroke. People with kidney disease should avoid it.",
            "Ibuprofen is a nonsteroidal anti-inflammatory drug (NSAID) used to relieve pain, fever and "
            "inflammation. The usual adult dose is 200 to 400 milligrams every four to six hours.",
        ],
        "answer": "Based on the given passages, here are the main side effects of ibuprofen:\n\n"
        "1. Common side effects: stomach pain, heartburn, nausea and dizziness (Passage 1).\n"
        "2. Risks with long-term or high-dose use: stomach ulcers, bleeding, heart attack and stroke "
        "(Passage 2).\n\n"
        "Taking ibuprofen with food or milk can help reduce stomach upset, and people with kidney disease "
        "should avoid it. I hope this helps!",
        "hallucinated": "Based on the given passages, here are the main side effects of ibuprofen:\n\n"
        "1. Common side effects: stomach pain, heartburn, nausea, dizziness and blurred vision (Passage 1).\n"
        "2. Risks with long-term or high-dose use: stomach ulcers, bleeding, heart attack and stroke "
        "(Passage 2).\n\n"
        "Taking ibuprofen with food or milk can help reduce stomach upset, and people with kidney disease "
        "should avoid it. I hope this helps!",
        "kind": "baseless detail",
        "changed": "blurred vision",
    },
    {
        "query": "how long is the great wall of china",
        "chunks": [
            "A 2012 survey by China's State Administration of Cultural Heritage found that the Great Wall, "
            "including all of its branches, measures 21,196 kilometres.",
            "The best-known sections of the wall were built during the Ming dynasty (1368-1644). Earlier "
            "walls date back to the 7th century BC.",
            "Contrary to popular belief, the Great Wall cannot be seen from space with the naked eye.",
        ],
        "answer": "According to passage 1, a 2012 survey found that the Great Wall of China, with all its "
        "branches, is 21,196 kilometres long. Passage 2 adds that the most famous parts were built under "
        "the Ming dynasty, between 1368 and 1644, although earlier walls go back to the 7th century BC. "
        "Passage 3 does not provide information about the wall's length.",
        "hallucinated": "According to passage 1, a 2012 survey found that the Great Wall of China, with "
        "all its branches, is 21,196 kilometres long. Passage 2 adds that the most famous parts were built "
        "under the Ming dynasty, between 1368 and 1644, although earlier walls go back to the 7th century "
        "BC. Passage 3 notes that the wall is the only man-made structure visible from space.",
        "kind": "contradiction",
        "changed": "the wall is the only man-made structure visible from space",
    },
    {
        "query": "what is the minimum wage in california",
        "chunks": [
            "As of January 1, 2024, the minimum wage in California is $16.00 per hour for all employers, "
            "regardless of the number of employees.",
            "Some cities and counties in California have higher local minimum wages. In West Hollywood, "
            "the minimum wage is $19.08 per hour.",
            "Fast food workers at large chains in California earn at least $20 per hour since April 2024.",
        ],
        "answer": "California's statewide minimum wage is $16.00 an hour as of January 1, 2024, and it "
        "applies to all employers no matter how many people they employ. Some cities set higher rates; "
        "West Hollywood, for example, requires $19.08 an hour. Since April 2024, fast food workers at large "
        "chains must be paid at least $20 an hour.",
        "hallucinated": "California's statewide minimum wage is $16.00 an hour as of January 1, 2024, but "
        "employers with fewer than 25 employees may pay $15.50. Some cities set higher rates; West "
        "Hollywood, for example, requires $19.08 an hour. Since April 2024, fast food workers at large "
        "chains must be paid at least $20 an hour.",
        "kind": "contradiction",
        "changed": "employers with fewer than 25 employees may pay $15.50",
    },
    {
        "query": "how do vaccines work",
        "chunks": [
            "Vaccines train the immune system to recognise a germ without causing the disease. They contain "
            "weakened or inactivated parts of a particular organism, or instructions to make such parts.",
            "After vaccination, the immune system produces antibodies and memory cells. If the person is "
            "later exposed to the real germ, the body can respond faster and more effectively.",
            "Some vaccines need several doses, given weeks or months apart, to build full immunity. Booster "
            "shots may be needed because protection can fade over time.",
        ],
        "answer": "Vaccines work by teaching your immune system to recognise a specific germ without making "
        "you sick. They contain weakened or inactivated parts of the organism, or instructions for making "
        "those parts. Your body responds by producing antibodies and memory cells, so if you're exposed "
        "to the real germ later, it can fight it off faster and more effectively. Some vaccines require "
        "several doses to build full immunity, and boosters may be needed since protection can wane.",
        "hallucinated": "Vaccines work by teaching your immune system to recognise a specific germ without "
        "making you sick. They contain weakened or inactivated parts of the organism, or instructions for "
        "making those parts. Your body responds by producing antibodies and memory cells, which remain in "
        "the body for life, so if you're exposed to the real germ later, it can fight it off faster and "
        "more effectively. Some vaccines require several doses to build full immunity.",
        "kind": "contradiction",
        "changed": "which remain in the body for life",
    },
    {
        "query": "when did the titanic sink",
        "chunks": [
            "RMS Titanic sank in the early hours of 15 April 1912 in the North Atlantic Ocean, four days "
            "into her maiden voyage from Southampton to New York City.",
            "The ship struck an iceberg at 11:40 pm ship's time on 14 April. More than 1,500 of the "
            "estimated 2,224 passengers and crew died.",
            "The wreck was discovered in 1985 by a team led by Robert Ballard, at a depth of about 3,800 "
            "metres.",
        ],
        "answer": "The Titanic sank in the early morning of April 15, 1912, in the North Atlantic, four "
        "days after setting out on its first voyage from Southampton to New York. It had hit an iceberg at "
        "11:40 pm the night before, and over 1,500 of the roughly 2,224 people on board lost their lives. "
        "The wreck was found in 1985 by a team led by Robert Ballard.",
        "hallucinated": "The Titanic sank in the early morning of April 15, 1912, in the North Atlantic, "
        "four days after setting out on its first voyage from Southampton to New York. It had hit an "
        "iceberg at 11:40 pm the night before, and over 1,500 of the roughly 2,224 people on board lost "
        "their lives. The wreck was found in 1986 by a team led by Robert Ballard.",
        "kind": "date changed",
        "changed": "found in 1986",
    },
    {
        "query": "is coffee bad for your heart",
        "chunks": [
            "Large studies have found that drinking two to three cups of coffee a day is associated with a "
            "lower risk of heart disease and of dying from cardiovascular causes.",
            "Caffeine can cause a short, temporary rise in blood pressure, especially in people who do not "
            "drink it regularly.",
            "People with uncontrolled high blood pressure or heart rhythm problems should talk to their "
            "doctor about how much caffeine is safe for them.",
        ],
        "answer": "For most people, coffee doesn't appear to be bad for the heart. Research shows that "
        "having two to three cups a day is linked to a lower risk of heart disease and cardiovascular "
        "death. Caffeine can briefly raise blood pressure, particularly if you don't usually drink it. If "
        "you have uncontrolled high blood pressure or a heart rhythm disorder, ask your doctor how much "
        "caffeine is safe for you.",
        "hallucinated": "For most people, coffee doesn't appear to be bad for the heart. Research shows "
        "that having two to three cups a day prevents heart disease and cardiovascular death. Caffeine can "
        "briefly raise blood pressure, particularly if you don't usually drink it. If you have uncontrolled "
        "high blood pressure or a heart rhythm disorder, ask your doctor how much caffeine is safe for you.",
        "kind": "stated more strongly",
        "changed": "prevents heart disease and cardiovascular death",
    },
    {
        "query": "what is the tallest building in the world",
        "chunks": [
            "The Burj Khalifa in Dubai, United Arab Emirates, is the tallest building in the world, standing "
            "828 metres tall. It opened in January 2010.",
            "The Burj Khalifa has 163 floors and was designed by the architecture firm Skidmore, Owings & "
            "Merrill.",
            "The Merdeka 118 tower in Kuala Lumpur, completed in 2023, is the second tallest building in the "
            "world at 679 metres.",
        ],
        "answer": "The tallest building in the world is the Burj Khalifa in Dubai, UAE. It rises 828 metres "
        "and has 163 floors, and it opened in January 2010. It was designed by Skidmore, Owings & Merrill. "
        "The second tallest is Merdeka 118 in Kuala Lumpur, which reaches 679 metres and was completed in "
        "2023.",
        "hallucinated": "The tallest building in the world is the Burj Khalifa in Dubai, UAE. It rises 828 "
        "metres and has 163 floors, and it opened in January 2010. It was designed by Skidmore, Owings & "
        "Merrill. The second tallest is the Shanghai Tower, which reaches 679 metres and was completed in "
        "2023.",
        "kind": "entity swapped",
        "changed": "the Shanghai Tower",
    },
    {
        "query": "how to lower cholesterol naturally",
        "chunks": [
            "Eating foods rich in soluble fibre, such as oats, beans and apples, can help lower LDL "
            "cholesterol. Replacing saturated fats with unsaturated fats also helps.",
            "Regular exercise, at least 150 minutes of moderate activity a week, can raise HDL, the good "
            "cholesterol, and lower LDL.",
            "Quitting smoking improves HDL cholesterol levels, and losing even a small amount of weight can "
            "reduce LDL.",
        ],
        "answer": "There are several natural ways to lower cholesterol:\n\n"
        "- Eat more soluble fibre, found in foods like oats, beans and apples, which helps reduce LDL "
        "cholesterol.\n"
        "- Swap saturated fats for unsaturated fats.\n"
        "- Exercise regularly, aiming for at least 150 minutes of moderate activity each week; this can "
        "raise your HDL (good) cholesterol and lower LDL.\n"
        "- Quit smoking, which improves HDL levels.\n"
        "- Lose weight, since even a small loss can bring down LDL.",
        "hallucinated": "There are several natural ways to lower cholesterol:\n\n"
        "- Eat more soluble fibre, found in foods like oats, beans and apples, which helps reduce LDL "
        "cholesterol.\n"
        "- Swap saturated fats for unsaturated fats.\n"
        "- Exercise regularly, aiming for at least 300 minutes of moderate activity each week; this can "
        "raise your HDL (good) cholesterol and lower LDL.\n"
        "- Quit smoking, which improves HDL levels.\n"
        "- Lose weight, since even a small loss can bring down LDL.",
        "kind": "number changed",
        "changed": "at least 300 minutes",
    },
]
